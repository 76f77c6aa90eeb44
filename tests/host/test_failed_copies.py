"""Failed copies never orphan a node on either tier: nothing is loaded back, inserted or
backed up below a node whose copy is still in flight, so when that copy fails, taking its
values back leaves the tiers' closure rules intact."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from radixkv import CacheConfig, PrefixCache
from radixkv.cache.lease import LeaseState
from radixkv.host import Completion, Copy, CopyEngine, HostTier, NumpyCopyConfig, NumpyCopyEngine

FIRST, REST = list(range(1, 9)), list(range(50, 58))


class OrderedCopyEngine(CopyEngine):
    """Completes batches only when the test says so, in the order it says."""

    def __init__(self) -> None:
        self.tickets: list[int] = []
        self._done: list[Completion] = []

    def submit(self, copies: Sequence[Copy]) -> int:
        self.tickets.append(len(self.tickets) + 1)
        return self.tickets[-1]

    def complete(self, ticket: int, ok: bool = True) -> None:
        self._done.append(Completion(ticket, ok))

    def poll(self) -> list[Completion]:
        done, self._done = self._done, []
        return done

    def wait(self, tickets: Collection[int]) -> list[Completion]:
        """Blocking: what was asked for lands (successfully) now."""
        reported = {c.ticket for c in self._done}
        self._done += [Completion(t, True) for t in tickets if t not in reported]
        return self.poll()


def _demoted(engine: CopyEngine) -> PrefixCache:
    """FIRST + REST cached, backed up, then demoted by an unrelated 32-token request."""
    cache = PrefixCache(CacheConfig(capacity=32, page_size=4, host=HostTier(capacity=128)),
                        engine)
    for tokens in (FIRST + REST, list(range(100, 132))):
        cache.finish(cache.admit(tokens))
        _settle(cache, engine)
    assert cache.match(FIRST + REST).host_length == 16
    cache.check_invariants()
    return cache


def _settle(cache: PrefixCache, engine: CopyEngine) -> None:
    if isinstance(engine, OrderedCopyEngine):
        for ticket in [t for t in engine.tickets if t in cache.host.records]:  # type: ignore[union-attr]
            engine.complete(ticket)
        cache.poll()
    else:
        cache.wait()


def test_a_load_back_over_a_prefix_still_loading_waits_for_it_and_fails_with_it() -> None:
    engine = NumpyCopyEngine(NumpyCopyConfig(delay_polls=1))
    cache = _demoted(engine)
    upper = cache.admit([*FIRST, 7], load_back=True)  # loads [0, 8)
    lower = cache.admit([*FIRST, *REST, 9], load_back=True)  # no second load below it
    assert (upper.cached_length, lower.cached_length) == (8, 8)
    assert lower.waiting == upper.waiting and len(upper.waiting) == 1
    cache.check_invariants()
    engine.fail(min(upper.waiting))
    assert cache.poll() == []
    assert set(cache.poll()) == {upper, lower}
    cache.check_invariants()
    assert upper.state is lower.state is LeaseState.FAILED
    assert cache.match(FIRST + REST).length == 0  # nothing usable is left on device
    assert cache.match(FIRST + REST).host_length == 16  # the host values stay
    assert cache.stats().host.failed_loads == 1  # type: ignore[union-attr]
    again = cache.admit([*FIRST, *REST, 9], load_back=True)
    cache.wait(again)
    assert again.ready and again.cached_length == 16
    cache.finish(again)
    cache.check_invariants()


def test_an_insert_below_a_node_still_loading_stops_at_it() -> None:
    engine = OrderedCopyEngine()
    cache = _demoted(engine)
    upper = cache.admit([*FIRST, 7], load_back=True)
    (ticket,) = upper.waiting
    direct = cache.allocate(16)
    assert direct is not None
    cache.insert([*FIRST, *range(70, 78)], direct)  # cut at the loading node: nothing below
    cache.check_invariants()
    engine.complete(ticket, ok=False)
    assert cache.poll() == [upper]
    cache.check_invariants()
    assert cache.match([*FIRST, *range(70, 78)]).length == 0


def test_no_backup_is_made_below_one_in_flight_so_a_failure_orphans_nothing() -> None:
    engine = OrderedCopyEngine()
    cache = PrefixCache(CacheConfig(capacity=64, page_size=4, host=HostTier(capacity=128)),
                        engine)
    cache.finish(cache.admit(FIRST))  # backup 1: [0, 8)
    cache.finish(cache.admit(FIRST + REST))  # below backup 1, in flight: it stays due
    assert engine.tickets == [1]
    cache.check_invariants()
    engine.complete(1, ok=False)
    cache.poll()  # the failure leaves both nodes device-only; the due child goes now,
    cache.check_invariants()  # with its parent (the host set stays closed to the root)
    assert engine.tickets == [1, 2]
    host = cache.stats().host
    assert host is not None and host.failed_backups == 1
    assert host.components["full"].backed_up == 0
    assert cache.match(FIRST + REST).length == 16  # the device values are untouched
    _settle(cache, engine)
    host = cache.stats().host
    assert host is not None and host.components["full"].backed_up == 16
    assert host.components["full"].cached == 16 and host.copies_in_flight == 0
    cache.check_invariants()
