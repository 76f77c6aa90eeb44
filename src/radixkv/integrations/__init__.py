"""radixkv as the prefix cache of real serving engines.

Each engine's adapter lives in its own subpackage and imports the engine only there:
importing :mod:`radixkv` or this package never imports an engine.

- :mod:`radixkv.integrations.sglang`: an SGLang radix-cache backend
  (``--radix-cache-backend radixkv``), registered through the ``sglang.srt.plugins`` entry
  point :func:`radixkv.integrations.sglang.register.register`.
- :mod:`radixkv.integrations.vllm`: a vLLM KV connector (``--kv-transfer-config`` with
  ``"kv_connector": "RadixKVConnector"`` and ``"kv_connector_module_path":
  "radixkv.integrations.vllm.connector"``).
"""

from __future__ import annotations

__all__: list[str] = []
