"""Registers SGLang's own default cache factory under a second name, to test the
``radix_cache_backend`` plumbing (``--radix-cache-backend``) without radixkv.

Imported through ``EngineProcess(preload=["sglang_default_backend"])``: at the top level of
the worker script, so also in SGLang's scheduler process, where the cache is built.
"""

from __future__ import annotations

from sglang.srt.mem_cache.registry import (
    default_radix_cache_factory,
    register_radix_cache_backend,
    registered_radix_cache_backends,
)

NAME = "sglang-default-via-registry"

if NAME not in registered_radix_cache_backends():
    register_radix_cache_backend(NAME, default_radix_cache_factory)
