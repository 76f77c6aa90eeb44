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
