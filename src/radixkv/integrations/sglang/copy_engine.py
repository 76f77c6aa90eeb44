"""The host tier's copy engine over SGLang's KV pool: moves KV rows between SGLang's device
buffers and a host buffer radixkv's host tier and storage tier (L3) read and write.

SGLang 0.5.23's ``MHATokenToKVPool`` (NHD layout) keeps one key and one value tensor per
layer, ``k_buffer[l][slot]`` of shape ``(head_num, head_dim)`` and ``v_buffer[l][slot]`` of
``(head_num, v_head_dim)``, in ``store_dtype``, on the pool's device. One host row holds a
slot's whole KV: ``(layers, head_num * (head_dim + v_head_dim))`` elements, every layer's key
then value, flattened. That row is what the storage layout declares (:func:`row_shape`), so
engines of one model and one tensor-parallel split share L3 pages byte for byte.

Copies run when a batch is submitted (``index_select`` / ``index_copy_`` per layer; on a
GPU the host buffer is pinned and the submit synchronises the stream before it returns), so
a batch is complete at the next :meth:`poll`. A torch error while copying fails the batch
(``Completion.ok`` False), never the call: the cache then treats its destination as holding
nothing.

Negative control (tests only): ``negative_control=True`` makes every load-back write the
batch's first source row into every destination row, so a test comparing outputs must see
that the KV restored from the host tier or L3 is read.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch  # type: ignore[import-not-found, unused-ignore]

from radixkv.host import Completion, Copy, CopyEngine, Direction

__all__ = ["SGLangCopyEngine", "layout_dtype", "row_shape"]

logger = logging.getLogger(__name__)

_BITS = {torch.bfloat16: (torch.int16, np.uint16, "bfloat16")}
"""Store dtypes numpy lacks: held as raw bits (torch view, numpy view, layout dtype name)."""
for _name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if hasattr(torch, _name):
        _BITS[getattr(torch, _name)] = (torch.uint8, np.uint8, _name)


def layout_dtype(dtype: Any) -> str:
    """The ``StorageLayout.dtype`` name of a KV store dtype (``float32``, ``bfloat16``...)."""
    if dtype in _BITS:
        return _BITS[dtype][2]
    return str(dtype).removeprefix("torch.")


def row_shape(kv_pool: Any) -> tuple[int, int]:
    """One host row of ``kv_pool``: ``(layers, head_num * (head_dim + v_head_dim))``."""
    width = int(kv_pool.head_num) * (int(kv_pool.head_dim) + int(kv_pool.v_head_dim))
    return int(kv_pool.layer_num), width


class SGLangCopyEngine(CopyEngine):
    """Copies FULL KV rows between SGLang's ``MHATokenToKVPool`` and a host buffer of
    ``host_slots`` rows (allocated here, pinned when the pool is on a GPU)."""

    def __init__(self, kv_pool: Any, host_slots: int, *, negative_control: bool = False) -> None:
        self._keys: list[Any] = list(kv_pool.k_buffer)
        self._values: list[Any] = list(kv_pool.v_buffer)
        self._key_width = int(kv_pool.head_num) * int(kv_pool.head_dim)
        dtype = kv_pool.store_dtype
        device = torch.device(kv_pool.device)
        pin = device.type == "cuda"
        self._host = torch.empty((int(host_slots), *row_shape(kv_pool)), dtype=dtype,
                                 pin_memory=pin)
        self._device = device
        self._negative_control = negative_control
        self._done: list[Completion] = []
        self._tickets = 0
        self.copied_rows = 0
        """Rows copied so far, both directions."""

    def host_buffer(self, component: str) -> npt.NDArray[Any] | None:
        """The host rows as numpy (raw bits for dtypes numpy lacks); FULL only."""
        if component != "full":
            return None
        bits = _BITS.get(self._host.dtype)
        if bits is None:
            array: npt.NDArray[Any] = self._host.numpy()
            return array
        return self._host.view(bits[0]).numpy().view(bits[1])  # type: ignore[no-any-return]

    def submit(self, copies: Sequence[Copy]) -> int:
        self._tickets += 1
        try:
            for copy in copies:
                self._copy(copy)
            if self._device.type == "cuda":
                torch.cuda.current_stream(self._device).synchronize()
            ok = True
        except Exception:  # a torch error fails the batch, never the call (the contract)
            logger.exception("radixkv: a KV copy between SGLang's pool and the host failed")
            ok = False
        self._done.append(Completion(self._tickets, ok))
        return self._tickets

    def poll(self) -> list[Completion]:
        done, self._done = self._done, []
        return done

    def _copy(self, copy: Copy) -> None:
        if copy.component != "full":
            raise ValueError(f"no SGLang buffer for component {copy.component!r}")
        source = torch.from_numpy(np.ascontiguousarray(copy.source, dtype=np.int64))
        destination = torch.from_numpy(np.ascontiguousarray(copy.destination, dtype=np.int64))
        if copy.direction is Direction.TO_HOST:
            self._to_host(source.to(self._device), destination)
        else:
            if self._negative_control and len(source):
                source = source[:1].expand(len(source)).contiguous()
            self._to_device(source, destination.to(self._device))
        self.copied_rows += len(source)

    def _to_host(self, device_slots: Any, host_slots: Any) -> None:
        split = self._key_width
        for layer, (keys, values) in enumerate(zip(self._keys, self._values)):
            count = len(device_slots)
            row = self._host[:, layer]
            row[host_slots, :split] = keys.index_select(0, device_slots).reshape(count, -1).cpu()
            row[host_slots, split:] = values.index_select(0, device_slots).reshape(count, -1).cpu()

    def _to_device(self, host_slots: Any, device_slots: Any) -> None:
        split = self._key_width
        rows = self._host.index_select(0, host_slots).to(self._device, non_blocking=True)
        for layer, (keys, values) in enumerate(zip(self._keys, self._values)):
            layer_rows = rows[:, layer]
            keys.index_copy_(0, device_slots, layer_rows[:, :split].reshape(-1, *keys.shape[1:]))
            values.index_copy_(0, device_slots,
                               layer_rows[:, split:].reshape(-1, *values.shape[1:]))
