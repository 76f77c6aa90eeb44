"""Per-request outcomes and where each prompt token's reuse went."""

from __future__ import annotations

from dataclasses import dataclass, field

REASONS = ("hit", "evicted_full", "swa_mamba_missing", "never_cached", "other_engine",
           "not_cached_yet", "other_namespace", "never_seen", "uncacheable_tail")
"""How a prompt's tokens split, in this order along the prompt:

* ``hit``: served from the cache.
* ``evicted_full``: this engine's cache held their FULL KV once; it has been evicted since.
* ``swa_mamba_missing``: FULL KV still resident (known from the KV events) but a lighter
  component cannot serve them: an SWA tombstone, or no MAMBA state where the prefix would
  end. Without the events index these tokens count as ``evicted_full``.
* ``never_cached``: this engine computed them but its cache did not keep them (with MAMBA:
  they lay after the request's last state checkpoint).
* ``other_engine``: another engine computed them (a request in this namespace that the
  router sent there); this engine never did. Only with several engines.
* ``not_cached_yet``: an earlier request in this namespace had them, but no engine had
  computed them yet: that request was still waiting or prefilling (in flight).
* ``other_namespace``: only requests of another namespace had them.
* ``never_seen``: no earlier request had them.
* ``uncacheable_tail``: the last token (always computed, its logits are needed) and the
  partial page before it.
"""


@dataclass(slots=True)
class RequestRecord:
    """Times are simulated seconds; ``None`` for what did not happen. ``hit``: prompt
    tokens reused at the (last) admission that earlier requests had (what the request
    itself computed before a preemption is not a hit). ``rejected``: could never fit in
    memory. ``turn``: the request's turn in its chat or agent loop (workloads that have
    turns). ``host_hit``: the part of ``hit`` loaded back from the host tier.
    ``prefilled``: prompt tokens this request computed, over all its admissions.
    ``queued``: seconds it waited in a queue before its first token (at arrival, and
    again after a preemption); the rest of its TTFT is service."""

    rid: int
    arrival: float
    prompt_len: int
    output_len: int
    engine: int = 0
    hit: int = 0
    admitted: float | None = None
    first_token: float | None = None
    finished: float | None = None
    preemptions: int = 0
    rejected: bool = False
    losses: dict[str, int] = field(default_factory=dict)
    turn: int | None = None
    host_hit: int = 0
    prefilled: int = 0
    queued: float = 0.0

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.arrival

    @property
    def latency(self) -> float | None:
        if self.finished is None or self.rejected:
            return None
        return self.finished - self.arrival

    @property
    def recomputed(self) -> int:
        """Prompt tokens computed more than once (after a preemption): what it computed
        beyond the uncached part of its prompt."""
        return self.prefilled - (self.prompt_len - self.hit)


def partition(length: int, page: int, hit: int,
              bounds: tuple[int | None, int, int, int, int, int]) -> dict[str, int]:
    """Split ``length`` prompt tokens by :data:`REASONS`. ``bounds`` are prefix lengths:
    FULL KV resident now (``None``: unknown), held once by this cache, computed once by this
    engine, computed once by any engine, seen in earlier requests of this namespace, and of
    any namespace. Each reason takes the stretch between consecutive bounds (each raised to
    at least the one before), so the parts add up to ``length``."""
    cap = max(0, length - 1) // page * page
    resident, held, computed, elsewhere, seen, anywhere = bounds
    # bench sim: straight-line min/max, once per admission
    live = min(max(hit if resident is None else resident, hit), cap)
    held = min(max(held, live), cap)
    computed = min(max(computed, held), cap)
    elsewhere = min(max(elsewhere, computed), cap)
    seen = min(max(seen, elsewhere), cap)
    anywhere = min(max(anywhere, seen), cap)
    return {"hit": hit, "evicted_full": held - live, "swa_mamba_missing": live - hit,
            "never_cached": computed - held, "other_engine": elsewhere - computed,
            "not_cached_yet": seen - elsewhere,
            "other_namespace": anywhere - seen, "never_seen": cap - anywhere,
            "uncacheable_tail": length - cap}
