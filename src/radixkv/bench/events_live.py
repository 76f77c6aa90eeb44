"""``radixkv bench events``, second part: admit + finish with a live KV event publisher.

Three settings, each round running every one in turn on a fresh FULL cache of the default
page hash (which goes first rotates from round to round): **off** (events off, the step is
admit + finish + ``take_events``), **queued** (events on, the step drains them with
``take_events`` in-process and reads none) and **live** (events on, the step calls a
:class:`~radixkv.events.KVEventPublisher`'s ``publish``; its thread encodes, keeps for replay
and sends every batch over loopback TCP to a subscriber that reads them after the timed
block). Timed: the short prompts' first pass (each prompt's question is new, so every step
publishes a batch), after a warm-up.

Two figures per setting, because the publisher's thread shares the interpreter lock with the
scheduler: **p50**, the median step (what the scheduler's typical admit + finish costs), and
**mean**, the block's wall time over its steps *including the final* ``flush()`` (every byte
the thread encoded and sent for these steps, so nothing it does is left out). Ratios are
each round's setting ÷ off; the median over rounds is reported.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..cache import CacheConfig, PrefixCache

SETTINGS = ("off", "queued", "live")
LOOPBACK = "tcp://127.0.0.1:*"


def _cache(setting: str, page_size: int, capacity: int) -> PrefixCache:
    return PrefixCache(CacheConfig(capacity=capacity, page_size=page_size,
                                   events=setting != "off", lost_hits=False))


class _Subscriber:
    """A SUB socket on its own ZMQ context (as a router in another process would be),
    connected before the timed block and read after it."""

    def __init__(self, endpoint: str) -> None:
        import zmq

        self._context: Any = zmq.Context()
        self.socket: Any = self._context.socket(zmq.SUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, 0)  # keep every batch until read
        self.socket.setsockopt(zmq.SUBSCRIBE, b"")
        self.socket.connect(endpoint)

    def sequences(self, wait: float, until: int | None = None) -> list[int]:
        """The sequence numbers of the messages received and not read yet: those already
        there, after waiting up to ``wait`` seconds for the first, or (``until``) every one
        up to that number, waiting up to ``wait`` seconds for each."""
        seqs: list[int] = []
        timeout = int(wait * 1000)
        while self.socket.poll(timeout if not seqs or until is not None else 0):
            frames = self.socket.recv_multipart()
            seqs.append(int.from_bytes(frames[1], "big"))
            if seqs[-1] == until:
                break
        return seqs

    def close(self) -> None:
        self.socket.close()
        self._context.term()


@dataclass
class _Live:
    """The live setting's publisher, its subscriber, and the sequence number and counters
    the timed block started from."""

    publisher: Any
    subscriber: _Subscriber
    first: int = 0
    before: dict[str, int] = field(default_factory=dict)

    def connect(self) -> None:
        """Publish AllBlocksCleared until the subscriber hears one (a SUB socket gets only
        what is sent after its subscription reached the publisher), for up to a minute;
        then note where the timed block starts."""
        from ..core.events import AllBlocksCleared

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self.publisher.publish_events([AllBlocksCleared()])
            self.publisher.flush(10)
            if self.subscriber.sequences(wait=0.1):
                break
        self.first, self.before = self.publisher.next_sequence, self.publisher.stats()

    def counts(self) -> dict[str, Any]:
        """The timed block's batches, wake-ups, drops, and how many the subscriber got."""
        after = self.publisher.stats()
        batches = after["batches"] - self.before["batches"]
        first = self.first
        arrived = self.subscriber.sequences(wait=5.0, until=first + batches - 1)
        return {"batches": batches,
                "wakeups": after["sender_wakeups"] - self.before["sender_wakeups"],
                "received": len({seq for seq in arrived if first <= seq < first + batches}),
                "dropped_events": after["dropped_events"] - self.before["dropped_events"]}


@contextmanager
def _publishing(setting: str, cache: PrefixCache) -> Iterator[tuple[Callable[[], Any],
                                                                    _Live | None]]:
    """The step's drain (``take_events``, or a publisher's ``publish`` when live) and the
    live setting's parts."""
    if setting != "live":
        yield cache.take_events, None
        return
    from ..events import KVEventPublisher

    publisher = KVEventPublisher(endpoint=LOOPBACK, replay_endpoint=LOOPBACK)
    live = _Live(publisher, _Subscriber(publisher.endpoint))
    try:
        yield (lambda: publisher.publish(cache)), live
    finally:
        publisher.close()
        live.subscriber.close()


def run_block(setting: str, page_size: int, prompts: list[list[int]], capacity: int,
              warmup: int) -> dict[str, Any]:
    """One setting's timed block: p50 and mean µs of a step (mean includes the final
    flush), and for live the publisher's batches, wake-ups and what the subscriber got."""
    cache = _cache(setting, page_size, capacity)
    admit, finish = cache.admit, cache.finish
    with _publishing(setting, cache) as (drain, live):
        def step(prompt: list[int]) -> None:
            finish(admit(prompt))
            drain()

        for prompt in prompts[:warmup]:
            step(prompt)
        if live is not None:
            live.connect()
        flush = None if live is None else live.publisher.flush
        record = _timed(step, prompts[warmup:], flush)
        if live is not None:
            record |= live.counts()
    cache.check_invariants()
    return record


def _timed(step: Callable[[list[int]], None], items: list[list[int]],
           flush: Callable[[float], bool] | None) -> dict[str, Any]:
    """p50 µs of ``step`` over ``items`` and the mean µs a step of the whole block, the
    final ``flush`` included (the garbage collector off meanwhile)."""
    latencies: list[float] = []
    now = time.perf_counter
    gc.collect()
    gc.disable()
    try:
        start = now()
        for item in items:
            begin = now()
            step(item)
            latencies.append(now() - begin)
        flushed = flush is None or flush(60)
        wall = now() - start
    finally:
        gc.enable()
    return {"p50_us": statistics.median(latencies) * 1e6, "mean_us": wall / len(items) * 1e6,
            "flushed": flushed}


def run_publisher_rounds(prompts: list[list[int]], page_sizes: list[int], rounds: int,
                         capacity: int) -> list[dict[str, Any]]:
    """One record per (round, page size, setting); the settings' order rotates per round."""
    warmup = min(20, len(prompts) // 10)
    records: list[dict[str, Any]] = []
    for round_index in range(rounds):
        for page_size in page_sizes:
            shift = round_index % len(SETTINGS)
            for setting in SETTINGS[shift:] + SETTINGS[:shift]:
                record = run_block(setting, page_size, prompts, capacity, warmup)
                records.append({"round": round_index, "page_size": page_size,
                                "setting": setting} | record)
    return records


def summarize_publisher(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (page size, setting): medians over rounds of p50, mean and of each round's
    p50 and mean ratios to off (with every round's ratios)."""
    off = {(r["round"], r["page_size"]): r for r in records if r["setting"] == "off"}
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["page_size"], record["setting"]), []).append(record)
    summary = []
    for (page, setting), rows in sorted(groups.items(),
                                        key=lambda item: (item[0][0],
                                                          SETTINGS.index(item[0][1]))):
        p50_ratios = [r["p50_us"] / off[r["round"], page]["p50_us"] for r in rows]
        mean_ratios = [r["mean_us"] / off[r["round"], page]["mean_us"] for r in rows]
        summary.append({"page_size": page, "setting": setting,
                        "p50_us": statistics.median(r["p50_us"] for r in rows),
                        "mean_us": statistics.median(r["mean_us"] for r in rows),
                        "p50_ratio": statistics.median(p50_ratios),
                        "mean_ratio": statistics.median(mean_ratios),
                        "p50_ratios": [round(q, 3) for q in p50_ratios],
                        "mean_ratios": [round(q, 3) for q in mean_ratios]})
    return summary


def render_publisher(summary: list[dict[str, Any]], records: list[dict[str, Any]],
                     rounds: int) -> str:
    """The summary as a table, and the live publisher's batching."""
    lines = [f"admit + finish + drain, new pass, default page hash, median of {rounds} "
             "round(s); drain: take_events (off, queued) or publish (live: the publisher's "
             "thread running); mean includes the final flush; ratios ÷ off",
             f"{'page':>4} {'events':<7} {'p50':>8} {'ratio':>6} {'mean':>8} {'ratio':>6}  "
             "rounds (p50 / mean)"]
    for row in summary:
        lines.append(f"{row['page_size']:>4} {row['setting']:<7} {row['p50_us']:>8.1f} "
                     f"{row['p50_ratio']:>6.2f} {row['mean_us']:>8.1f} "
                     f"{row['mean_ratio']:>6.2f}  "
                     f"{' '.join(f'{q:.2f}' for q in row['p50_ratios'])} / "
                     f"{' '.join(f'{q:.2f}' for q in row['mean_ratios'])}")
    live = [r for r in records if r["setting"] == "live"]
    if live:
        batches = sum(r["batches"] for r in live)
        lines.append(f"live: {batches} batches, {sum(r['received'] for r in live)} received, "
                     f"{sum(r['wakeups'] for r in live)} wake-ups of the publisher's thread, "
                     f"{sum(r['dropped_events'] for r in live)} events dropped")
    return "\n".join(lines)
