"""The engine's buffers as the copy engine sees them: one array per cache component, first
axis = slot, every layer reading that component in one row; host buffers of the same row
shape, registered on both tiers."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv import PrefixCache
from radixkv.errors import ConfigError
from radixkv.host import Copy, CopyEngine, Direction, NumpyCopyEngine
from radixkv.model import Engine, Memory, ModelConfig, PoolSizes
from radixkv.model.host import attach_host

from .host_support import host_cache
from .support import model_reference, small_cache

ALL = ("full", "swa", "chunked", "mamba")


def test_layers_reading_one_component_share_one_buffer_row_per_slot() -> None:
    config = ModelConfig(layers=("ssm", "swa", "full", "swa", "ssm"), d_model=8, heads=2,
                         state_size=3)
    memory = Memory(config, PoolSizes({"full": 5, "swa": 5}, 4,
                                      shared={"full": "full", "swa": "full"}))
    assert memory.buffers["full"].shape == (5, 3, 2, 2, 4)  # every attention layer
    assert memory.buffers["ssm"].shape == (4, 2, 3)
    memory.kv[3].write(2, np.full((2, 4), 1.5), np.full((2, 4), -1.0))
    assert (memory.buffers["full"][2, 2, 0] == 1.5).all()
    assert (memory.buffers["full"][2, 2, 1] == -1.0).all()
    rows = memory.buffers["full"]
    assert not rows[[0, 1, 3, 4]].any() and not rows[2, :2].any()
    memory.states[4][1] = 7.0
    assert (memory.buffers["ssm"][1, 1] == 7.0).all() and not memory.buffers["ssm"][1, 0].any()


def test_kinds_sharing_a_buffer_need_the_same_slots() -> None:
    sizes = PoolSizes({"full": 5, "swa": 7}, 0, shared={"swa": "full"})
    with pytest.raises(ValueError, match="sharing buffer 'full'"):
        Memory(ModelConfig(layers=("swa", "full")), sizes)


def test_kinds_with_their_own_component_get_their_own_buffer() -> None:
    memory = Memory(ModelConfig(layers=("swa", "full")), PoolSizes({"full": 5, "swa": 3}, 0))
    assert sorted(memory.buffers) == ["full", "swa"]
    assert memory.buffers["swa"].shape[:2] == (3, 1)


def test_the_engine_registers_device_and_host_buffers_of_every_component() -> None:
    config = host_cache(ALL, 16)
    copies = NumpyCopyEngine()
    cache = PrefixCache(config, copies)
    engine = Engine(model_reference(ALL).decoder, cache)
    assert config.host is not None
    for name in ALL:
        device, host = copies.buffer(name, "device"), copies.buffer(name, "host")
        assert device is not None and host is not None
        assert host is engine.host_buffers[name]
        assert host.shape[1:] == device.shape[1:]
        per_token = name != "mamba"
        assert len(host) == config.host.capacity_of(name, per_token)
    assert copies.buffer("mamba", "device") is engine.memory.buffers["ssm"]
    assert len(copies.buffer("full", "device")) == config.capacity  # type: ignore[arg-type]


def test_copies_move_whole_rows_of_a_components_buffer() -> None:
    cache = PrefixCache(host_cache(ALL, 1), copies := NumpyCopyEngine())
    engine = Engine(model_reference(ALL).decoder, cache)
    device = engine.memory.buffers["swa"]
    device[3] = 2.5
    copies.submit([Copy("swa", Direction.TO_HOST, np.array([3]), np.array([9]))])
    assert not engine.host_buffers["swa"][9].any()  # nothing moves before the completion
    copies.poll()
    assert (engine.host_buffers["swa"][9] == 2.5).all()


def test_without_a_host_tier_nothing_is_registered() -> None:
    engine = Engine(model_reference(ALL).decoder, PrefixCache(small_cache(ALL, 1)))
    assert engine.host_buffers == {}


def test_a_host_tier_needs_a_numpy_copy_engine() -> None:
    class Elsewhere(CopyEngine):
        def submit(self, copies: object) -> int:
            return 1

        def poll(self) -> list[object]:  # type: ignore[override]
            return []

    cache = PrefixCache(host_cache(ALL, 1), Elsewhere())  # type: ignore[abstract]
    with pytest.raises(ConfigError, match="NumpyCopyEngine"):
        attach_host(cache, Memory.scratch(model_reference(ALL).decoder.config, 4), "mamba")
