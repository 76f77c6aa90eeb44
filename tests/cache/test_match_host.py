"""What a match reports of the host tier: ``host_length`` beyond the device prefix, and the
load-backs still writing into the prefix (``loading``)."""

from __future__ import annotations

from radixkv import CacheConfig, HostTier, NumpyCopyConfig, NumpyCopyEngine, PrefixCache


def _demoted(delay: int) -> tuple[PrefixCache, list[int]]:
    engine = NumpyCopyEngine(NumpyCopyConfig(delay_polls=delay))
    cache = PrefixCache(CacheConfig(capacity=32, page_size=4,
                                    host=HostTier(capacity=64)), engine)
    prompt = list(range(1, 17))
    cache.finish(cache.admit(prompt))
    cache.wait()  # the write-through backup lands
    assert cache.evict(16) == {"full": 16}
    cache.check_invariants()
    return cache, prompt


def test_a_match_reports_the_host_part_of_a_demoted_prefix() -> None:
    cache, prompt = _demoted(delay=0)
    found = cache.match([*prompt, 99])
    assert (found.length, found.host_length, found.loading) == (0, 16, ())
    assert cache.match(prompt[:8]).host_length == 8


def test_a_match_over_a_prefix_being_loaded_names_the_copy_until_it_lands() -> None:
    cache, prompt = _demoted(delay=2)
    lease = cache.admit(prompt, load_back=True)
    assert not lease.ready and lease.waiting
    found = cache.match(prompt)
    assert found.length == 16 and found.loading == tuple(sorted(lease.waiting))
    cache.check_invariants()
    assert cache.wait(lease) == [lease]
    assert cache.match(prompt).loading == ()
    cache.finish(lease)
    cache.check_invariants()


def test_a_match_without_a_host_tier_has_no_host_part() -> None:
    cache = PrefixCache(CacheConfig(capacity=32, page_size=4))
    cache.finish(cache.admit(list(range(1, 17))))
    found = cache.match(list(range(1, 17)))
    assert (found.length, found.host_length, found.loading) == (16, 0, ())


def test_a_node_stored_under_a_backup_in_flight_is_backed_up_once_that_copy_lands() -> None:
    engine = NumpyCopyEngine(NumpyCopyConfig(delay_polls=1))
    cache = PrefixCache(CacheConfig(capacity=64, page_size=4,
                                    host=HostTier(capacity=64)), engine)
    cache.finish(cache.admit(list(range(1, 9))))  # write-through: its backup is in flight
    cache.finish(cache.admit(list(range(1, 17))))  # the new child waits for it
    host = cache.stats().host
    assert host is not None and (host.backup_batches, host.copies_in_flight) == (1, 1)
    cache.poll()  # not landed yet (one poll of delay)
    cache.poll()  # landed: the child is backed up at once
    host = cache.stats().host
    assert host is not None and (host.backup_batches, host.copies_in_flight) == (2, 1)
    cache.wait()
    cache.check_invariants()
    assert cache.stats().host.components["full"].cached == 16  # type: ignore[union-attr]
