"""Whether the engines kept up with the trace (issue #34, item 1): offered load against what
the engines served, the simulated span against the trace's, and TTFT split into queueing and
service, with a warning when the engines could not keep up.

Under overload a run's hit rate is a property of its cost model as much as of the cache:
queues change which requests run together (a prefix still being computed is not reusable
yet) and how often memory runs short (preemptions, evictions of what a queued request would
have reused). docs/simulator.md ("Overload") says by how much on the shipped trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .records import RequestRecord

STRETCH_LIMIT = 1.25
"""Overloaded when the simulated span (first arrival to last finish) exceeds the trace's
span (first to last arrival) by more than this factor *and* queueing dominates TTFT: the
engines fell behind the arrivals. (A long span alone can be the last requests' own service
time, with nothing queued.)"""

QUEUE_SHARE_LIMIT = 0.5
"""Queueing dominates when it is more than this share of all requests' TTFT together. It
does so under overload, and also under bursts (many arrivals at one time) that the engines
work off within the trace's span: then TTFT is queueing, though the engines keep up."""

PERCENTILES = (50, 90, 99)


def percentiles(values: Sequence[float | None]) -> dict[str, float | None]:
    """p50/p90/p99 and the mean of the values present (``None`` each when there are none)."""
    present = np.array([v for v in values if v is not None], dtype=np.float64)
    found: dict[str, float | None] = dict.fromkeys([f"p{p}" for p in PERCENTILES] + ["mean"])
    if present.size:
        found.update({f"p{p}": float(np.percentile(present, p)) for p in PERCENTILES})
        found["mean"] = float(present.mean())
    return found


def load_report(records: Sequence[RequestRecord], busy_seconds: Sequence[float]
                ) -> dict[str, Any]:
    """The load section of a run's report; ``busy_seconds``: per engine, the simulated time
    it spent running steps."""
    first = min((r.arrival for r in records), default=0.0)
    trace_span = max((r.arrival for r in records), default=0.0) - first
    end = max((r.finished for r in records if r.finished is not None), default=first)
    span, busy = end - first, sum(busy_seconds)
    tokens = sum(r.prompt_len + r.output_len for r in records if not r.rejected)
    offered = _rate(tokens, trace_span)
    capacity = _rate(tokens * len(busy_seconds), busy)
    found = {"trace_span_s": trace_span, "simulated_span_s": span,
             "stretch": _rate(span, trace_span),
             "offered_tokens_per_s": offered, "capacity_tokens_per_s": capacity,
             "offered_load": None if offered is None or not capacity else offered / capacity,
             "busy_fraction": _rate(busy, span * len(busy_seconds)),
             **_ttft_split(records)}
    stretch = found["stretch"]
    found["queueing_dominates"] = found["ttft_queue_share"] > QUEUE_SHARE_LIMIT
    found["overloaded"] = bool(found["queueing_dominates"] and stretch is not None
                               and stretch > STRETCH_LIMIT)
    found["warning"] = warning(found)
    return found


def _rate(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def _ttft_split(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """TTFT's queueing part (waiting for admission, at arrival and after preemptions) and
    its service part (admission to first token: prefill steps, load-backs)."""
    started = [r for r in records if r.first_token is not None]
    queued = [r.queued for r in started]
    service = [r.first_token - r.arrival - r.queued for r in started
               if r.first_token is not None]
    total = sum(queued) + sum(service)
    return {"ttft_queue_s": percentiles(queued), "ttft_service_s": percentiles(service),
            "ttft_queue_share": sum(queued) / total if total > 0 else 0.0}


def warning(load: dict[str, Any]) -> str | None:
    """What the summary warns of (``None`` when the engines kept up without queues)."""
    share = f"queueing is {100 * load['ttft_queue_share']:.0f}% of TTFT"
    if load["overloaded"]:
        return (f"overloaded, the engines cannot keep up: they took {load['stretch']:.2f}x "
                f"the trace's span ({load['simulated_span_s']:,.1f} s for "
                f"{load['trace_span_s']:,.1f} s) and {share}")
    if load["queueing_dominates"]:
        return f"{share}: arrivals come in bursts the engines work off later"
    return None
