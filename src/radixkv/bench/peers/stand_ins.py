"""Import-time stand-ins for CUDA-only modules that SGLang imports but the tree never calls.

With ``SGLANG_USE_CPU_ENGINE=1`` two SGLang modules on the radix cache's import path do
``from sgl_kernel import <cpu kernel>`` at import time; ``sgl_kernel`` is a CUDA build that
is not installed here, and neither kernel is called by the tree, the allocators or the
request release path. The stand-in module defines exactly those names, each a function that
raises if called, so a call would fail loudly instead of being silently skipped. Any other
``sgl_kernel`` import still fails as before.
"""

from __future__ import annotations

import sys
import types
from typing import NoReturn

MODULE = "sgl_kernel"
NAMES = ("copy_all_layer_kv_cache_cpu", "assign_req_to_token_pool_cpu")


class StandInCalledError(RuntimeError):
    """A stand-in was called: the benchmark reached code it assumed unused."""


def _stand_in(name: str) -> types.FunctionType:
    def call(*_args: object, **_kwargs: object) -> NoReturn:
        raise StandInCalledError(f"{MODULE}.{name} is an import-time stand-in (CUDA-only)")

    call.__name__ = name
    return call  # type: ignore[return-value]


def install() -> list[str]:
    """Put the stand-in module in ``sys.modules`` unless a real one is importable; return
    the names stood in (empty when the real module was used)."""
    if MODULE in sys.modules:
        return []
    try:
        __import__(MODULE)
    except Exception:  # not installed, or a CUDA build that cannot load here
        pass
    else:
        return []
    module = types.ModuleType(MODULE, "radixkv benchmark stand-in: raises if called")
    for name in NAMES:
        setattr(module, name, _stand_in(name))
    sys.modules[MODULE] = module
    return [f"{MODULE}.{name}" for name in NAMES]
