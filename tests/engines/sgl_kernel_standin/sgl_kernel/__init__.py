"""Import-time stand-in for ``sgl_kernel`` (SGLang's CUDA/CPU kernel package).

SGLang 0.5.23 running with ``SGLANG_USE_CPU_ENGINE=1`` imports these names at module level
(``from sgl_kernel import ..._cpu``) but, for a dense Llama with the torch_native attention
backend and no speculative decoding, never calls them. Every function here raises
``NotImplementedError`` when called, so a code path that does need a real kernel fails
loudly instead of computing something wrong.

Only the names that are imported are provided; there is no module ``__getattr__`` and no
submodules (``sgl_kernel.scalar_type``, ``sgl_kernel.kvcacheio``, ...), so SGLang's own
``except ImportError`` fallbacks still apply wherever it probes for optional kernels.
The list was found by recording every attribute SGLang looked up during an engine start
and a generate call.
"""

from __future__ import annotations

from typing import Any, NoReturn

__version__ = "0.0.0+standin"
STANDIN = True

_NAMES = (
    # sglang/srt/mem_cache/allocation.py
    "assign_req_to_token_pool_cpu",
    # sglang/kernels/ops/kvcache/cache_move.py
    "copy_all_layer_kv_cache_cpu",
    # sglang/kernels/ops/speculative/*.py (speculative decoding only)
    "assign_draft_cache_locs_contiguous_cpu",
    "assign_extend_cache_locs_cpu",
    "build_tree_kernel_efficient_cpu",
    "fill_accept_out_cache_loc_cpu",
    "fill_bonus_tokens_cpu",
    "verify_tree_greedy_cpu",
)


def _standin(name: str) -> Any:
    def function(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(
            f"sgl_kernel.{name} was called, but this is the import-time stand-in "
            "(tests/engines/sgl_kernel_standin): the real kernel is not installed. "
            "The engine took a code path the CPU engine tests do not support."
        )

    function.__name__ = function.__qualname__ = name
    function.__module__ = __name__
    return function


for _name in _NAMES:
    globals()[_name] = _standin(_name)
del _name

__all__ = list(_NAMES)
