"""The metric table: what radixkv exports, and the two naming presets (vLLM-like and
SGLang-like) that give each metric the name an existing dashboard already queries."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ConfigError


@dataclass(frozen=True)
class MetricSpec:
    """One exported metric: its key in the samples, Prometheus type, label names (in the
    radixkv vocabulary; a preset may rename them) and help text."""

    key: str
    kind: str
    labels: tuple[str, ...]
    help: str


CACHE_METRICS = (
    MetricSpec("queries", "counter", (), "Prompt tokens looked up by match and admit."),
    MetricSpec("hits", "counter", ("tier",),
               "Prompt tokens served from the cache, by the tier they came from (host: "
               "loaded back by admit)."),
    MetricSpec("lost", "counter", ("component", "reason"),
               "Prompt tokens that did not hit, by why: held but cut by a component "
               "(evicted, tombstone, no_state), past max_match, or unseen."),
    MetricSpec("evictions", "counter", ("component", "tier", "reason"),
               "Cached tokens (MAMBA: states) evicted from a tier, by reason: budget, "
               "cascade, removal."),
    MetricSpec("inserted", "counter", (), "Tokens newly cached by finish, commit and insert."),
    MetricSpec("requests", "counter", ("outcome",), "Requests admitted, finished, aborted."),
    MetricSpec("checkpoints", "counter", ("use",), "MAMBA checkpoints created, and used."),
    MetricSpec("events_dropped", "counter", (), "KV events dropped by a full event queue."),
    MetricSpec("hit_rate", "gauge", (), "Hit tokens / queried tokens since start."),
    MetricSpec("usage", "gauge", ("component", "tier"), "Share of a pool's slots in use."),
    MetricSpec("pool_slots", "gauge", ("component", "tier", "state"),
               "A pool's slots by state: free or used."),
    MetricSpec("cached", "gauge", ("component", "tier", "state"),
               "Cached tokens (MAMBA: states) on a tier by state: evictable or protected "
               "(locked)."),
    MetricSpec("held", "gauge", (), "FULL slots held by running requests (not cached)."),
    MetricSpec("leases", "gauge", (), "Running requests (active leases)."),
    MetricSpec("nodes", "gauge", (), "Tree nodes."),
)

HOST_METRICS = (
    MetricSpec("tier_copied", "counter", ("component", "direction"),
               "Tokens (MAMBA: states) copied by acknowledged copies: device_to_host "
               "(backups) or host_to_device (load-backs)."),
    MetricSpec("tier_batches", "counter", ("direction",),
               "Copy batches submitted: device_to_host or host_to_device."),
    MetricSpec("tier_failures", "counter", ("direction",),
               "Copy batches the copy engine reported failed."),
    MetricSpec("tier_in_flight", "gauge", (), "Copy batches submitted, not yet acknowledged."),
    MetricSpec("tier_skipped", "counter", (),
               "Backups skipped for want of host room (after host eviction)."),
    MetricSpec("tier_faults", "counter", (),
               "Answers of the copy engine refused or ignored (it raised, or gave a bad "
               "ticket, completion or ok)."),
    MetricSpec("load_requests", "counter", (), "Admissions that loaded a prefix back from "
               "the host."),
)
"""Exported only by a cache with a host tier (``CacheConfig(host=...)``)."""

STORAGE_METRICS = (
    MetricSpec("storage_prefetches", "counter", (),
               "L3 prefetches started (the prompt beyond device and host reached the "
               "threshold)."),
    MetricSpec("storage_prefetch_outcomes", "counter", ("outcome",),
               "L3 prefetches ended, by outcome: restored (nodes added), miss (nothing "
               "usable), no_room (no host room), not_attached (the tree had them), "
               "cancelled (reset or close)."),
    MetricSpec("storage_prefetches_in_flight", "gauge", (), "L3 prefetches not ended yet."),
    MetricSpec("storage_lookups", "counter", (), "L3 lookups the store answered."),
    MetricSpec("storage_hit_pages", "counter", (),
               "Pages (all components) the store held and that were fetched."),
    MetricSpec("storage_restored_tokens", "counter", (),
               "Prompt tokens added to the tree from L3."),
    MetricSpec("storage_write_pages", "counter", ("result",),
               "Pages for L3 puts: queued (snapshotted), written (the store took them), "
               "failed."),
    MetricSpec("storage_bytes", "counter", ("direction",),
               "Bytes moved by the store's calls: read or written."),
    MetricSpec("storage_seconds", "counter", ("call",),
               "Seconds spent in the store's calls, by kind: exists, get, put."),
    MetricSpec("storage_faults", "counter", ("kind",),
               "Pages lost to store faults, by kind: unavailable, timeout, corrupt, "
               "missing, full, error."),
)
"""Exported only by a cache with a storage tier (``CacheConfig(storage=...)``)."""

PUBLISHER_METRICS = (
    MetricSpec("kv_batches", "counter", ("kind",),
               "KV event batches sent: batch or heartbeat."),
    MetricSpec("kv_send_errors", "counter", (), "KV event batches that failed to send."),
    MetricSpec("kv_dropped", "counter", (), "KV events lost before the wire."),
    MetricSpec("kv_resyncs", "counter", (), "Automatic republish_all after a drop."),
    MetricSpec("kv_replay_requests", "counter", ("result",),
               "Replay requests: served or malformed."),
    MetricSpec("kv_replay_lagged", "counter", (),
               "Replay requests from a router that lagged past the buffer."),
    MetricSpec("kv_replay_missed", "counter", (),
               "Batches lagging routers asked for that had left the buffer."),
    MetricSpec("kv_pending", "gauge", (), "KV event batches waiting to be sent."),
    MetricSpec("kv_replay_buffered", "gauge", (), "Batches the replay buffer holds."),
)


ALL_METRICS = CACHE_METRICS + HOST_METRICS + STORAGE_METRICS + PUBLISHER_METRICS


@dataclass(frozen=True)
class Preset:
    """A naming convention: metric names by key, and label renames."""

    name: str
    names: dict[str, str]
    label_names: dict[str, str]

    def metric(self, key: str) -> str:
        return self.names[key]

    def label(self, label: str) -> str:
        return self.label_names.get(label, label)


def _names(prefix: str, overrides: dict[str, str]) -> dict[str, str]:
    base = {
        "queries": "prefix_cache_queries", "hits": "prefix_cache_hits",
        "lost": "prefix_cache_lost_tokens", "evictions": "prefix_cache_evictions",
        "inserted": "prefix_cache_inserted_tokens", "requests": "prefix_cache_requests",
        "checkpoints": "prefix_cache_checkpoints",
        "events_dropped": "prefix_cache_events_dropped",
        "hit_rate": "prefix_cache_hit_rate", "usage": "kv_cache_usage_perc",
        "pool_slots": "kv_cache_pool_slots", "cached": "prefix_cache_cached",
        "held": "prefix_cache_held_by_requests", "leases": "prefix_cache_active_leases",
        "nodes": "prefix_cache_nodes",
        "tier_copied": "kv_cache_tier_copied", "tier_batches": "kv_cache_tier_copy_batches",
        "tier_failures": "kv_cache_tier_copy_failures",
        "tier_in_flight": "kv_cache_tier_copies_in_flight",
        "tier_skipped": "kv_cache_tier_skipped_backups",
        "tier_faults": "kv_cache_tier_copy_engine_faults",
        "load_requests": "prefix_cache_load_back_requests",
        "storage_prefetches": "kv_storage_prefetches",
        "storage_prefetch_outcomes": "kv_storage_prefetch_outcomes",
        "storage_prefetches_in_flight": "kv_storage_prefetches_in_flight",
        "storage_lookups": "kv_storage_lookups", "storage_hit_pages": "kv_storage_hit_pages",
        "storage_restored_tokens": "kv_storage_restored_tokens",
        "storage_write_pages": "kv_storage_write_pages", "storage_bytes": "kv_storage_bytes",
        "storage_seconds": "kv_storage_seconds", "storage_faults": "kv_storage_faults",
        "kv_batches": "kv_events_batches", "kv_send_errors": "kv_events_send_errors",
        "kv_dropped": "kv_events_dropped", "kv_resyncs": "kv_events_resyncs",
        "kv_replay_requests": "kv_events_replay_requests",
        "kv_replay_lagged": "kv_events_replay_lagged",
        "kv_replay_missed": "kv_events_replay_missed",
        "kv_pending": "kv_events_pending", "kv_replay_buffered": "kv_events_replay_buffered",
    }
    base.update(overrides)
    return {key: prefix + name for key, name in base.items()}


PRESETS = {
    "vllm": Preset("vllm", _names("vllm:", {}), {}),
    "sglang": Preset("sglang", _names("sglang:", {
        "hits": "cached_tokens", "hit_rate": "cache_hit_rate", "usage": "token_usage",
    }), {"tier": "cache_source"}),
}
"""``vllm``: vLLM's ``vllm:prefix_cache_queries`` / ``_hits`` / ``kv_cache_usage_perc``;
``sglang``: SGLang's ``sglang:cached_tokens`` (label ``cache_source``),
``sglang:cache_hit_rate``, ``sglang:token_usage``. Other metrics keep one radixkv name
under the preset's prefix."""

_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ConfigError(f"unknown metrics preset {name!r}; valid: {', '.join(PRESETS)}")
    return PRESETS[name]


def check_user_labels(labels: object, chosen: Preset) -> dict[str, str]:
    """User labels (model name, engine id, ranks...) as a fresh dict of str; raises
    :class:`ConfigError` for a bad name or value, or one that shadows a radixkv label."""
    if not isinstance(labels, Mapping):
        raise ConfigError(f"labels must be a mapping of str to str, got {labels!r}")
    ours = {chosen.label(label) for spec in ALL_METRICS for label in spec.labels}
    for key, value in labels.items():
        if not isinstance(key, str) or not _LABEL.match(key) or key.startswith("__"):
            raise ConfigError(f"bad metric label name {key!r}")
        if key in ours:
            raise ConfigError(f"label {key!r} is one of radixkv's own labels")
        if not isinstance(value, str):
            raise ConfigError(f"label {key!r} must have a str value, got {value!r}")
    return dict(labels)
