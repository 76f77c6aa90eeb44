"""HostTier: its validation, and the host pools a cache builds from it."""

from __future__ import annotations

import pytest

from radixkv import CacheConfig, PrefixCache
from radixkv.errors import ConfigError
from radixkv.host import WRITE_POLICIES, HostTier, WritePolicy


@pytest.mark.parametrize("capacity", [-1, 1.5, "8", True, None])
def test_a_host_capacity_that_is_no_int_at_least_zero_is_refused(capacity: object) -> None:
    with pytest.raises(ConfigError, match="host capacity"):
        HostTier(capacity=capacity)  # type: ignore[arg-type]


@pytest.mark.parametrize("states", [-2, 2.0, False])
def test_a_host_state_count_that_is_no_int_at_least_zero_is_refused(states: object) -> None:
    with pytest.raises(ConfigError, match="host states"):
        HostTier(capacity=8, states=states)  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", ["write-through", "lru", "", "WRITE_BACK"])
def test_an_unknown_write_policy_is_refused_with_the_valid_ones_named(policy: str) -> None:
    with pytest.raises(ConfigError, match="unknown write policy") as raised:
        HostTier(capacity=8, write_policy=policy)
    assert all(name in str(raised.value) for name in WRITE_POLICIES)


def test_each_write_policy_has_its_backup_uses() -> None:
    assert [HostTier(capacity=0, write_policy=name).policy.backup_uses for name in
            ("write_through", "write_through_selective", "write_back")] == [1, 2, None]


@pytest.mark.parametrize("policy", list(WritePolicy))
def test_a_write_policy_given_by_name_is_stored_as_the_enum(policy: WritePolicy) -> None:
    by_name, by_enum = (HostTier(capacity=8, write_policy=given)
                        for given in (policy.value, policy))
    assert by_name.write_policy is by_enum.write_policy is by_name.policy is policy
    assert by_name == by_enum and hash(by_name) == hash(by_enum)
    assert str(policy) == f"{policy}" == policy.value and policy == policy.value


def test_the_default_write_policy_is_write_through_and_stats_name_it_plainly() -> None:
    cache = PrefixCache(CacheConfig(capacity=8, host=HostTier(capacity=8)))
    assert cache.config.host is not None
    assert cache.config.host.write_policy is WritePolicy.WRITE_THROUGH
    stats = cache.stats().host
    assert stats is not None and type(stats.write_policy) is str
    assert stats.write_policy == "write_through"


def test_per_component_capacities_are_normalized_to_sorted_pairs() -> None:
    tier = HostTier(capacity=16, states=3, capacities={"swa": 8, "full": 32})
    assert tier.overrides == (("full", 32), ("swa", 8))
    assert tier == HostTier(capacity=16, states=3, capacities=(("swa", 8), ("full", 32)))
    assert tier.capacity_of("swa", per_token=True) == 8
    assert tier.capacity_of("mamba", per_token=False) == 3
    assert tier.capacity_of("other", per_token=True) == 16


@pytest.mark.parametrize("capacities", [{"swa": -1}, {"swa": "x"}, (("swa",),)])
def test_a_bad_per_component_capacity_is_refused(capacities: object) -> None:
    with pytest.raises(ConfigError, match="host capacit"):
        HostTier(capacity=8, capacities=capacities)  # type: ignore[arg-type]


def test_a_capacity_for_a_component_the_cache_lacks_is_refused() -> None:
    with pytest.raises(ConfigError, match="'swa': no such component"):
        CacheConfig(capacity=8, host=HostTier(capacity=8, capacities={"swa": 4}))


def test_a_host_capacity_off_the_page_size_is_refused() -> None:
    with pytest.raises(ConfigError, match="multiple of its page size 4"):
        CacheConfig(capacity=16, page_size=4, host=HostTier(capacity=10))
    with pytest.raises(ConfigError, match="'swa' \\(6\\) must be a multiple"):
        CacheConfig(capacity=16, page_size=4, components=("full", "swa"), sliding_window=4,
                    host=HostTier(capacity=16, capacities={"swa": 6}))


def test_host_states_need_no_page_multiple() -> None:
    config = CacheConfig(capacity=16, page_size=4, components=("full", "mamba"),
                         mamba_track_interval=4, host=HostTier(capacity=16, states=3))
    cache = PrefixCache(config)
    assert cache.host is not None
    assert [pool.capacity for pool in cache.host.pools] == [16, 3]


def test_host_must_be_a_host_tier() -> None:
    with pytest.raises(ConfigError, match="host must be a HostTier"):
        CacheConfig(capacity=8, host={"capacity": 8})  # type: ignore[arg-type]


def test_without_a_host_tier_the_tree_has_one_tier_and_no_host_stats() -> None:
    cache = PrefixCache(CacheConfig(capacity=8))
    assert cache.host is None and [t.name for t in cache.tree.tiers] == ["device"]
    assert cache.stats().host is None
    assert cache.poll() == [] and cache.wait() == []
    lease = cache.admit([1, 2, 3], load_back=True)
    assert lease.ready and cache.match([1, 2, 3]).host_length == 0


def test_each_component_gets_a_host_pool_of_its_capacity() -> None:
    config = CacheConfig(capacity=16, components=("full", "swa", "mamba"), sliding_window=2,
                         mamba_track_interval=2, host=HostTier(
                             capacity=32, states=5, capacities={"swa": 12}))
    cache = PrefixCache(config)
    assert cache.host is not None and [t.name for t in cache.tree.tiers] == ["device", "host"]
    assert [(p.capacity, p.available) for p in cache.host.pools] == [(32, 32), (12, 12), (5, 5)]
    host = cache.stats().host
    assert host is not None and host.write_policy == "write_through"
    assert {name: c.pool_capacity for name, c in host.components.items()} == {
        "full": 32, "swa": 12, "mamba": 5}
