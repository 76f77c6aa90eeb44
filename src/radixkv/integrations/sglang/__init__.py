"""SGLang radix-cache backend backed by a radixkv :class:`~radixkv.PrefixCache`.

Select it with ``--radix-cache-backend radixkv`` once the plug-in has run: the entry point
``radixkv = "radixkv.integrations.sglang.register:register"`` in the ``sglang.srt.plugins``
group makes SGLang's scheduler process call :func:`register` at start-up
(``sglang.srt.plugins.load_plugins``), which registers the factory under the name
``"radixkv"``.

Modules: ``allocator`` (SGLang's token-to-KV allocator seen as radixkv's
``SlotAllocator``), ``keys`` (``RadixKey`` to tokens and namespace), ``handles`` (what
``req.last_node`` holds, and lock receipts), ``support`` (configurations refused at
construction), ``events`` (KV events), ``settings`` (the host tier and L3, from the
environment), ``copy_engine`` (KV rows between SGLang's pool and the host), ``tiers`` (the
tiers built, and prefixes restored at match time), ``backend`` (the ``BasePrefixCache``
subclass), ``register`` (the entry point).

Importing this package imports neither SGLang nor torch; its modules do.

Negative control (tests only): ``RADIXKV_SGLANG_NEGATIVE_CONTROL=1`` in the scheduler's
environment, read once when the cache is built, makes ``match_prefix`` hand SGLang the
reused prefix's KV indices all pointing at the prefix's first row (see :mod:`.backend`), so a
test that compares outputs with and without reuse must see them differ; ``=load`` breaks the
rows restored from the host tier or L3 instead (see :mod:`.copy_engine`).
"""

from __future__ import annotations

__all__ = ["BACKEND_NAME", "NEGATIVE_CONTROL_ENV"]

BACKEND_NAME = "radixkv"
"""The name ``--radix-cache-backend`` selects."""

NEGATIVE_CONTROL_ENV = "RADIXKV_SGLANG_NEGATIVE_CONTROL"
"""Set to ``1`` to make reused prefixes read wrong KV (every position the first row's), or
to ``load`` to make load-backs from the host tier or L3 write wrong rows; tests only."""
