"""The ``sglang.srt.plugins`` entry point: registers the ``radixkv`` radix-cache backend.

``pyproject.toml`` declares::

    [project.entry-points."sglang.srt.plugins"]
    radixkv = "radixkv.integrations.sglang.register:register"

SGLang's ``load_plugins()`` (``sglang/srt/plugins/__init__.py``; run at the start of
``run_scheduler_process``, the engine and the detokenizer) loads every entry point of that
group (``SGLANG_PLUGINS=name,...`` restricts which) and calls it with no argument. Then
``--radix-cache-backend radixkv`` makes ``create_tree_cache``
(``sglang/srt/mem_cache/registry.py``) call :func:`build` with its
``TreeCacheBuildContext``.

Environment: ``RADIXKV_SGLANG_PAGE_HASH`` (``sha256`` default, or ``xxh3_128``) picks the
page hash behind KV event ids and L3 keys; the host tier and L3 are set by the variables of
:mod:`.settings`.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from radixkv.integrations.sglang import BACKEND_NAME

__all__ = ["build", "policy_for", "register"]

logger = logging.getLogger(__name__)

POLICIES = ("lru", "lfu", "fifo", "mru", "filo", "priority", "slru", "tlru")
"""SGLang ``--radix-eviction-policy`` names radixkv has a policy of the same name for."""


def register() -> None:
    """Register ``build`` under ``radixkv`` with SGLang; a second call is a no-op."""
    from sglang.srt.mem_cache.registry import (  # type: ignore[import-not-found, unused-ignore]
        get_radix_cache_factory,
        register_radix_cache_backend,
    )

    if get_radix_cache_factory(BACKEND_NAME) is not None:
        return
    register_radix_cache_backend(BACKEND_NAME, build)
    logger.info("radixkv: registered the %r radix-cache backend", BACKEND_NAME)


def build(ctx: Any) -> Any:
    """The factory SGLang calls: checks ``ctx`` (refusing what is unsupported, see
    :mod:`.support`), then builds the backend over SGLang's own KV allocator."""
    from radixkv.integrations.sglang.backend import RadixKVPrefixCache
    from radixkv.integrations.sglang.settings import TierSettings
    from radixkv.integrations.sglang.support import check_supported

    tiers = TierSettings.from_env(os.environ)
    check_supported(ctx, tiers)
    params = ctx.params
    return RadixKVPrefixCache(params, policy=policy_for(params),
                              page_hash=os.environ.get("RADIXKV_SGLANG_PAGE_HASH", "sha256"),
                              tiers=tiers, model=tiers.model or model_id(ctx.server_args))


def model_id(server_args: Any) -> str:
    """The model id in L3 page keys: the model path, ``@revision`` when one is given."""
    path = str(getattr(server_args, "model_path", "") or "")
    revision = getattr(server_args, "revision", None)
    return f"{path}@{revision}" if revision else path


def policy_for(params: Any) -> str:
    """radixkv's policy for SGLang's ``eviction_policy``; refuses policies radixkv lacks or
    policy options it does not take."""
    from radixkv.integrations.sglang.support import UnsupportedConfiguration

    name = str(getattr(params, "eviction_policy", "lru") or "lru").lower()
    if name not in POLICIES:
        raise UnsupportedConfiguration(
            f"--radix-cache-backend radixkv has no eviction policy {name!r} "
            f"(it has {', '.join(POLICIES)})")
    if getattr(params, "eviction_policy_config", None):
        raise UnsupportedConfiguration(
            "--radix-cache-backend radixkv does not take --radix-eviction-policy-config")
    return name
