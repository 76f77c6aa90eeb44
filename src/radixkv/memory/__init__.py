"""Slot memory: the page-granular allocator of KV-cache slot ids, the engine's own allocator
seen the same way, and slot-array validation."""

from __future__ import annotations

from radixkv.memory.engine_pool import EnginePool, SlotAllocator
from radixkv.memory.slot_arrays import SlotArray, as_slot_array
from radixkv.memory.slot_pool import SlotPool, SlotPoolConfig, SlotPoolSnapshot

__all__ = ["EnginePool", "SlotAllocator", "SlotArray", "SlotPool", "SlotPoolConfig",
           "SlotPoolSnapshot", "as_slot_array"]
