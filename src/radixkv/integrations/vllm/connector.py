"""``RadixKVConnector``: the ``KVConnectorBase_V1`` vLLM 0.32 loads by name.

::

    --kv-transfer-config '{"kv_connector": "RadixKVConnector", "kv_role": "kv_both",
      "kv_connector_module_path": "radixkv.integrations.vllm.connector"}'

vLLM builds it twice: in the scheduler (role ``SCHEDULER``), where it holds the radixkv
:class:`~radixkv.PrefixCache` (:class:`~.scheduler.SchedulerSide`), and in each worker
(role ``WORKER``), where it holds the row buffer (:class:`~.worker.WorkerSide`). The two
talk only through each step's metadata, a :class:`~.plan.StepPlan`: the rows the tree hands
out are indices into every worker's buffer alike.
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch  # type: ignore[import-not-found, unused-ignore]
from vllm.distributed.kv_transfer.kv_connector.v1.base import (  # type: ignore[import-not-found, unused-ignore]
    KVConnectorBase_V1,
    KVConnectorMetadata,
    KVConnectorRole,
)
from vllm.v1.metrics.cache_hit_source import (  # type: ignore[import-not-found, unused-ignore]
    CacheHitSource,
)

from radixkv import CacheConfig, PrefixCache
from radixkv.integrations.restore import Restorer
from radixkv.integrations.vllm import NEGATIVE_CONTROL_ENV
from radixkv.integrations.vllm.cpu_layout import cpu_paged_kv
from radixkv.integrations.vllm.lower_tiers import build_tiers
from radixkv.integrations.vllm.plan import StepPlan
from radixkv.integrations.vllm.scheduler import SchedulerSide
from radixkv.integrations.vllm.settings import ConnectorSettings
from radixkv.integrations.vllm.support import UnsupportedConfiguration, check_supported
from radixkv.integrations.vllm.worker import WorkerSide

__all__ = ["RadixKVConnector", "RadixKVMetadata"]


class RadixKVMetadata(KVConnectorMetadata):  # type: ignore[misc, unused-ignore]
    """One step's plan, from the scheduler side to every worker."""

    def __init__(self, plan: StepPlan) -> None:
        self.plan = plan


class RadixKVConnector(KVConnectorBase_V1):  # type: ignore[misc, unused-ignore]
    """radixkv as vLLM's prefix cache, through the KV connector interface."""

    _cache_hit_source = CacheHitSource.HOST  # the rows live in host memory

    def __init__(self, vllm_config: Any, role: Any, kv_cache_config: Any) -> None:
        super().__init__(vllm_config, role, kv_cache_config)
        check_supported(vllm_config, kv_cache_config)
        block_size = int(kv_cache_config.kv_cache_groups[0].kv_cache_spec.block_size)
        settings = ConnectorSettings.from_extra(
            self._kv_transfer_config.kv_connector_extra_config, block_size,
            int(kv_cache_config.num_blocks) * block_size)
        self.settings = settings
        self.scheduler: SchedulerSide | None = None
        self.worker: WorkerSide | None = None
        self.scheduler_seconds = 0.0
        """Time spent in the scheduler-side calls (``time.perf_counter``)."""
        if role == KVConnectorRole.SCHEDULER:
            self.scheduler = _scheduler_side(settings, block_size,
                                             vllm_config.model_config.model)
        else:
            layers = vllm_config.compilation_config.static_forward_context
            self.worker = WorkerSide(settings.capacity,
                                     lambda caches: cpu_paged_kv(caches, layers, block_size))

    @property
    def requires_kv_delivery(self) -> bool:
        """A cache hands nothing off: a save a preemption drops is only a later miss."""
        return False

    # ------------------------------------------------------------------ scheduler side

    def _side(self) -> SchedulerSide:
        if self.scheduler is None:
            raise RuntimeError("radixkv: a scheduler call on the worker's connector")
        return self.scheduler

    def get_num_new_matched_tokens(self, request: Any, num_computed_tokens: int
                                   ) -> tuple[int | None, bool]:
        start = time.perf_counter()
        matched = self._side().matched(request, int(num_computed_tokens))
        self.scheduler_seconds += time.perf_counter() - start
        return matched, False

    def update_state_after_alloc(self, request: Any, blocks: Any,
                                 num_external_tokens: int) -> None:
        start = time.perf_counter()
        block_ids = blocks.get_block_ids()[0] if num_external_tokens else ()
        self._side().allocated(request, int(num_external_tokens), block_ids)
        self.scheduler_seconds += time.perf_counter() - start

    def build_connector_meta(self, scheduler_output: Any) -> RadixKVMetadata:
        start = time.perf_counter()
        state = scheduler_output.kv_connector_block_state
        if state is None:
            raise RuntimeError("radixkv: vLLM gave no block state to build a step's plan")
        plan = self._side().step(scheduler_output.num_scheduled_tokens,
                                 lambda request_id: state.get_block_ids(request_id)[0],
                                 scheduler_output.preempted_req_ids or ())
        self.scheduler_seconds += time.perf_counter() - start
        return RadixKVMetadata(plan)

    def request_finished(self, request: Any, block_ids: Any) -> tuple[bool, None]:
        start = time.perf_counter()
        self._side().finished(request.request_id)
        self.scheduler_seconds += time.perf_counter() - start
        return False, None

    def reset_cache(self) -> bool | None:
        return None if self.scheduler is None else self.scheduler.reset()

    def shutdown(self) -> None:
        if self.scheduler is not None:  # L3's writes settle, its store closes
            self.scheduler.close()

    # ------------------------------------------------------------------ worker side

    def _worker(self) -> WorkerSide:
        if self.worker is None:
            raise RuntimeError("radixkv: a worker call on the scheduler's connector")
        return self.worker

    def register_kv_caches(self, kv_caches: dict[str, Any]) -> None:
        self._worker().register(kv_caches)

    def start_load_kv(self, forward_context: Any, **kwargs: Any) -> None:
        self._worker().load(self._plan())

    def wait_for_layer_load(self, layer_name: str) -> None:
        return  # start_load_kv's copies are done when it returns

    def save_kv_layer(self, layer_name: str, kv_layer: Any, attn_metadata: Any,
                      **kwargs: Any) -> None:
        return  # every layer's rows are saved at once, in wait_for_save

    def wait_for_save(self) -> None:
        self._worker().save(self._plan())

    def _plan(self) -> StepPlan:
        metadata = self._get_connector_metadata()
        if not isinstance(metadata, RadixKVMetadata):
            raise RuntimeError(f"radixkv: unexpected connector metadata {type(metadata)}")
        return metadata.plan


def _scheduler_side(settings: ConnectorSettings, block_size: int, model: str
                    ) -> SchedulerSide:
    """The cache over the row buffer, with the tiers ``settings`` ask for below it."""
    negative = _negative_control()
    parts = None
    if settings.host_tokens is not None:
        rows = _local_rows()
        parts = build_tiers(settings, rows.shape[1:], rows.dtype,
                            settings.storage_model or model,
                            negative_control=negative == "restore")
        assert parts is not None
        parts.copy_engine.attach(rows)
    config = CacheConfig(capacity=settings.capacity, page_size=settings.page_size,
                         policy=settings.policy, host=None if parts is None else parts.host,
                         storage=None if parts is None else parts.storage)
    if parts is None:
        return SchedulerSide(PrefixCache(config), block_size, negative_control=negative == "1")
    cache = PrefixCache(config, parts.copy_engine, storage=parts.store)
    return SchedulerSide(cache, block_size, negative_control=negative == "1",
                         copies=parts.copy_engine,
                         restorer=Restorer(cache, parts.storage is not None))


def _local_rows() -> Any:
    """The worker's row buffer as numpy, when the worker runs in this process (vLLM builds
    the worker's connector, and registers its KV caches, before the scheduler's)."""
    from vllm.distributed.kv_transfer import (  # type: ignore[import-not-found, unused-ignore]
        get_kv_transfer_group,
        has_kv_transfer_group,
    )

    worker = getattr(get_kv_transfer_group(), "worker", None) if has_kv_transfer_group() \
        else None
    if worker is None or worker.buffer is None:
        raise UnsupportedConfiguration(
            "kv_connector_extra_config: host_tokens (a host tier, and L3) needs vLLM's worker "
            "in the scheduler's process: one worker, distributed_executor_backend 'uni'")
    if worker.buffer.dtype not in (torch.float32, torch.float16):
        raise UnsupportedConfiguration(
            f"kv_connector_extra_config: host_tokens needs a float32 or float16 KV cache, "
            f"not {worker.buffer.dtype}")
    return worker.buffer.numpy()


def _negative_control() -> str | None:
    """``RADIXKV_VLLM_NEGATIVE_CONTROL`` (tests only): ``"1"`` (loads into vLLM write wrong
    rows), ``"restore"`` (restores from the host tier or L3 write wrong rows) or ``None``."""
    value = os.environ.get(NEGATIVE_CONTROL_ENV, "")
    if value not in ("", "0", "1", "restore"):
        raise UnsupportedConfiguration(f"{NEGATIVE_CONTROL_ENV}={value!r}: 0, 1 or restore")
    return None if value in ("", "0") else value
