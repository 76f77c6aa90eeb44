"""The connector's KV rows against vLLM's own CPU KV write (``cpu_attn_reshape_and_cache``),
no engine: the layout probe finds where the kernel puts every element, rows read back are
exactly the keys and values written, and rows written land where the kernel would put them.
Negative control: reading keys as ``[block_size][head_size]`` (the layout the kernel's cache
shape suggests) does not give back the keys written."""

from __future__ import annotations

from typing import Any

import pytest

from .engine import BLOCK_SIZE, VLLM_SKIP_REASON

torch = pytest.importorskip("torch", reason=VLLM_SKIP_REASON)
pytest.importorskip("vllm", reason=VLLM_SKIP_REASON)

from vllm import _custom_ops as ops  # noqa: E402
from vllm.v1.attention.backends.cpu_attn import _get_attn_isa  # noqa: E402

from radixkv.integrations.vllm.cpu_layout import cpu_block_writer  # noqa: E402
from radixkv.integrations.vllm.rows import PagedKV, probe_element_map  # noqa: E402

HEADS, HEAD = 2, 64
BLOCKS = 5


def kernel_write(cache: Any, slots: Any, key: Any, value: Any, isa: str) -> None:
    blocks, heads, size, width = cache.shape
    keys, values = cache.view(blocks, heads, 2 * size, width // 2).chunk(2, dim=2)
    ops.cpu_attn_reshape_and_cache(key, value, keys, values, slots, isa, 1.0, 1.0, "auto")


@pytest.fixture(params=[torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def case(request: pytest.FixtureRequest) -> tuple[Any, str, Any]:
    dtype = request.param
    isa = _get_attn_isa(dtype, BLOCK_SIZE, HEAD)
    shape = (HEADS, BLOCK_SIZE, 2 * HEAD)
    element_map = probe_element_map(cpu_block_writer(isa, BLOCK_SIZE), shape, dtype, BLOCK_SIZE,
                                    HEADS, HEAD)
    return dtype, isa, element_map


def written(dtype: Any, isa: str, count: int) -> tuple[Any, Any, Any, Any]:
    generator = torch.Generator().manual_seed(count)
    cache = torch.zeros((BLOCKS, HEADS, BLOCK_SIZE, 2 * HEAD), dtype=dtype)
    slots = torch.randperm(BLOCKS * BLOCK_SIZE, generator=generator)[:count]
    key = torch.randn((count, HEADS, HEAD), generator=generator).to(dtype)
    value = torch.randn((count, HEADS, HEAD), generator=generator).to(dtype)
    kernel_write(cache, slots, key, value, isa)
    return cache, slots, key, value


def test_rows_read_back_the_keys_and_values_the_kernel_wrote(case: tuple[Any, str, Any]
                                                             ) -> None:
    dtype, isa, element_map = case
    cache, slots, key, value = written(dtype, isa, 37)
    rows = PagedKV([cache, cache.clone()], BLOCK_SIZE, element_map).read(slots)
    expected = torch.cat([key.reshape(37, -1), value.reshape(37, -1)], dim=1)
    assert torch.equal(rows[:, 0], expected) and torch.equal(rows[:, 1], expected)


def test_rows_written_land_where_the_kernel_puts_them(case: tuple[Any, str, Any]) -> None:
    dtype, isa, element_map = case
    cache, slots, _, _ = written(dtype, isa, 53)
    rows = PagedKV([cache], BLOCK_SIZE, element_map).read(slots)
    copy = torch.zeros_like(cache)
    PagedKV([copy], BLOCK_SIZE, element_map).write(slots, rows)
    assert torch.equal(copy, cache)


def test_negative_control_the_shape_suggested_layout_misreads_keys() -> None:
    isa = _get_attn_isa(torch.float32, BLOCK_SIZE, HEAD)
    cache, slots, key, _ = written(torch.float32, isa, 37)
    halves = cache.view(BLOCKS, HEADS, 2 * BLOCK_SIZE, HEAD).permute(0, 2, 1, 3)
    naive = halves[slots // BLOCK_SIZE, slots % BLOCK_SIZE]
    assert not torch.equal(naive, key)


def test_the_probe_refuses_a_write_it_cannot_read() -> None:
    def leaves_values_unset(block: Any, key: Any, value: Any) -> None:
        block[..., : HEAD] = 0  # never writes the values' elements: they stay unset

    with pytest.raises(ValueError, match="unset or transforms"):
        probe_element_map(leaves_values_unset, (HEADS, BLOCK_SIZE, 2 * HEAD), torch.float32,
                          BLOCK_SIZE, HEADS, HEAD)
