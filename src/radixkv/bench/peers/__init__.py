"""Peers measured side by side with radixkv: SGLang's UnifiedRadixCache with its Python and
its Rust tree core.

Nothing here is imported unless ``radixkv bench ops --against sglang`` asks for it, and the
SGLang modules themselves are imported only inside the worker process
(:mod:`radixkv.bench.peers.worker`), which runs under the separate ``.venv-peers``
interpreter built by ``make bench-peers``. No SGLang code is copied here: the adapter calls
SGLang's public classes the way its scheduler does.
"""

from __future__ import annotations

TREES = ("radixkv", "sglang-python", "sglang-rust")
SGLANG_VERSION = "0.5.23"
