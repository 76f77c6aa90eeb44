"""vLLM KV connector backed by a radixkv :class:`~radixkv.PrefixCache`.

vLLM has no prefix-cache registry, but it loads an out-of-tree KV connector named by
``--kv-transfer-config``::

    --kv-transfer-config '{"kv_connector": "RadixKVConnector", "kv_role": "kv_both",
      "kv_connector_module_path": "radixkv.integrations.vllm.connector"}'

radixkv then decides what is reused and what is evicted; vLLM keeps its scheduler, its paged
KV cache and its allocator. The connector's rows live in a buffer beside vLLM's KV cache
(one row per token: every layer's key and value), and radixkv's tree hands out those rows.

Modules: ``settings`` (``kv_connector_extra_config``), ``support`` (configurations refused
at construction), ``keys`` (a request's tokens and namespace), ``plan`` (what one step
loads and saves), ``scheduler`` (the scheduler side: leases, matches, the step's plan),
``tiers`` (radixkv's host tier and L3 below the rows; host and L3 prefixes restored into
rows), ``host_copies`` (the host tier's copy engine between the rows and host memory),
``rows`` (KV rows between a paged KV cache of any block layout and the row buffer),
``cpu_layout`` (vLLM's CPU attention cache, its layout probed with vLLM's own KV write),
``worker`` (the worker side), ``connector`` (the ``KVConnectorBase_V1`` subclass vLLM loads).

Importing this package imports neither vLLM nor torch; ``rows``, ``cpu_layout``, ``worker``
and ``connector`` do.

Negative control (tests only): ``RADIXKV_VLLM_NEGATIVE_CONTROL=1`` in the engine's
environment, read once when the connector is built, makes every load write the request's
first reused row into every reused position (see :mod:`.scheduler`), so a test comparing
outputs with and without reuse must see them differ; ``=restore`` makes restores from the
host tier or L3 write wrong rows instead (see :mod:`.host_copies`).
"""

from __future__ import annotations

__all__ = ["CONNECTOR_MODULE", "CONNECTOR_NAME", "NEGATIVE_CONTROL_ENV"]

CONNECTOR_NAME = "RadixKVConnector"
"""The ``kv_connector`` name in ``--kv-transfer-config``."""

CONNECTOR_MODULE = "radixkv.integrations.vllm.connector"
"""The ``kv_connector_module_path`` in ``--kv-transfer-config``."""

NEGATIVE_CONTROL_ENV = "RADIXKV_VLLM_NEGATIVE_CONTROL"
"""Set to ``1`` to make loads write wrong rows (every position the first reused row's), or to
``restore`` to make restores from the host tier or L3 write wrong rows; tests only."""
