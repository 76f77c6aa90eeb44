"""One engine in its own OS process, for the two-engines test: the reference model served
through a cache with an L3 on a real shared store, checked bitwise against the uncached
run. ``python -m tests.storage.engine_process '<json>'`` (from the repository root) prints
one JSON line: whether every request matched, and what the storage tier did.

The JSON names the store (``{"kind": "redis", "socket": ..., "prefix": ...}`` or
``{"kind": "mooncake", "master": ..., "metadata": ...}``), the workload's ``decode``
length (the first engine and the second run the same system prompts and few-shot
examples, with outputs of different lengths, so their later chat turns differ) and
optionally ``name``, a model id of its own (keys no other engine wrote: a baseline)."""

from __future__ import annotations

import json
import sys
from typing import Any

from radixkv.storage import (
    MooncakeStorage,
    MooncakeStorageConfig,
    RedisStorage,
    RedisStorageConfig,
    StorageBackend,
)
from tests.model.storage_support import failures, run, storage_cache
from tests.model.support import COMBOS, model_reference, workload

COMBO = COMBOS[-1]
PAGE = 16


def store(spec: dict[str, Any]) -> StorageBackend:
    if spec["kind"] == "redis":
        return RedisStorage(RedisStorageConfig(unix_socket=spec["socket"],
                                               prefix=spec["prefix"]))
    return MooncakeStorage(MooncakeStorageConfig(
        master_address=spec["master"], metadata_server=spec["metadata"],
        local_buffer_size=16 << 20, staging_bytes=4 << 20))


def serve(spec: dict[str, Any]) -> dict[str, Any]:
    specs = workload(chats=4, families=2, decode=spec["decode"])
    config = storage_cache(COMBO, PAGE, name=spec.get("name"))
    report = run(model_reference(COMBO), config, store(spec), specs)
    storage = report.storage
    assert storage is not None
    return {"passed": report.passed, "failures": failures(report)[:3],
            "requests": len(specs), "prompt_tokens": report.prompt_tokens,
            "restored_tokens": storage.restored_tokens, "restores": storage.restores,
            "hit_pages": storage.hit_pages, "written_pages": storage.written_pages,
            "faults": storage.faults, "read_bytes": storage.backend.read_bytes,
            "share": report.storage_share}


if __name__ == "__main__":
    print(json.dumps(serve(json.loads(sys.argv[1]))))
