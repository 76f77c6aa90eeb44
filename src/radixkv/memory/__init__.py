"""Slot memory: the page-granular allocator of KV-cache slot ids, and slot-array validation."""

from __future__ import annotations

from radixkv.memory.slot_arrays import SlotArray, as_slot_array
from radixkv.memory.slot_pool import SlotPool, SlotPoolConfig, SlotPoolSnapshot

__all__ = ["SlotArray", "SlotPool", "SlotPoolConfig", "SlotPoolSnapshot", "as_slot_array"]
