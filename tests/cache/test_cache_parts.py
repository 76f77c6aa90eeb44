"""PrefixCache is its state plus parts: the parts' verbs are bound under the cache's names
(no forwarding call), the class still shows each verb with its part's signature and
contract, a subclass cannot silently hide one, and reset keeps every part's references
valid."""

from __future__ import annotations

import inspect

import pytest

from radixkv import CacheConfig, LeaseState, PrefixCache
from radixkv.cache.direct import Direct
from radixkv.cache.lifecycle import Lifecycle
from radixkv.cache.part_verb import PartVerb
from radixkv.cache.tier_driver import TierDriver
from radixkv.host import HostTier

PARTS = {"lifecycle": Lifecycle, "direct": Direct, "tier_driver": TierDriver}


def test_every_bound_verb_is_its_parts_own_bound_method() -> None:
    cache = PrefixCache(CacheConfig(capacity=16, host=HostTier(capacity=16)))
    for name in PrefixCache.BOUND_VERBS:
        verb = vars(PrefixCache)[name]
        assert isinstance(verb, PartVerb) and verb.part in PARTS
        part = getattr(cache, verb.part)
        assert type(part) is PARTS[verb.part]
        bound = vars(cache)[name]  # the instance's own binding, not the descriptor's answer
        assert bound.__self__ is part and bound.__func__ is getattr(PARTS[verb.part], name)
        assert getattr(cache, name) == bound
    assert set(PrefixCache.BOUND_VERBS) == {name for name, value in vars(PrefixCache).items()
                                            if isinstance(value, PartVerb)}


def test_the_class_shows_each_verb_as_its_parts_function() -> None:
    assert PrefixCache.admit is Lifecycle.admit and PrefixCache.insert is Direct.insert
    assert PrefixCache.poll is TierDriver.poll
    assert "load_back" in inspect.signature(PrefixCache.admit).parameters
    for name in PrefixCache.BOUND_VERBS:
        assert name in dir(PrefixCache)
        assert vars(PrefixCache)[name].__doc__ == getattr(PrefixCache, name).__doc__
        assert getattr(PrefixCache, name).__doc__


def test_a_subclass_defining_a_bound_verb_is_refused() -> None:
    with pytest.raises(TypeError, match="admit, finish"):
        class Hiding(PrefixCache):
            def admit(self, *args: object, **kwargs: object) -> None:  # type: ignore[override]
                raise AssertionError("never called")

            def finish(self, *args: object) -> None:  # type: ignore[override]
                raise AssertionError("never called")


def test_a_subclass_overriding_a_verb_of_the_cache_itself_runs_it() -> None:
    class Counting(PrefixCache):
        matches = 0

        def match(self, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            Counting.matches += 1
            return super().match(*args, **kwargs)  # type: ignore[arg-type]

    cache = Counting(CacheConfig(capacity=16))
    assert cache.match([1, 2]).length == 0 and Counting.matches == 1
    cache.check_invariants()


def test_after_reset_the_parts_see_the_caches_leases_and_allocations() -> None:
    cache = PrefixCache(CacheConfig(capacity=16))
    old = cache.admit([1, 2, 3])
    held = cache.allocate(2)
    assert held is not None
    cache.check_invariants()
    cache.reset()
    assert old.state is LeaseState.INVALIDATED and cache.leases() == []
    cache.check_invariants()
    lease = cache.admit([1, 2, 3])
    assert cache.leases() == [lease]
    again = cache.allocate(2)
    assert again is not None
    cache.check_invariants()
    assert cache.finish(lease) == 3 and cache.leases() == []
    cache.check_invariants()
    assert cache.insert([4, 5], again) == 2 and cache.match([4, 5]).length == 2
    cache.check_invariants()
    assert cache.stats().admitted == 2 and cache.stats().finished == 1
