"""One SGLang engine in its own process, driven over a local socket by ``harness.py``.

Started by ``EngineProcess`` as ``python _engine_worker.py CONFIG.json`` in a new session
(process group), so the test process can always kill the whole tree: this worker, SGLang's
scheduler and detokenizer subprocesses, and anything they start.

The config names the socket, the auth key, the engine's keyword arguments and modules to
import first. Those modules are imported at the top level of this script, so they also run
in SGLang's scheduler process: SGLang starts it with multiprocessing's ``spawn``, which
re-runs this (main) script's top level as ``__mp_main__`` there. That is one way to call
``register_radix_cache_backend`` where the cache is built; the other is an entry point in
the ``sglang.srt.plugins`` group, which SGLang's ``load_plugins()`` runs in every process.

Messages are pickled dicts: ``{"op": "generate", ...}``, ``{"op": "ping"}``,
``{"op": "shutdown"}``; each gets one reply dict with ``ok`` and either the result or
``error`` (a traceback).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import time
import traceback
from typing import Any

_CONFIG: dict[str, Any] = {}
if len(sys.argv) > 1 and sys.argv[1].endswith(".json"):
    with open(sys.argv[1]) as _f:
        _CONFIG = json.load(_f)
    # Inherited by the scheduler (spawn copies sys.argv too, but keep it explicit).
    os.environ["ENGINE_WORKER_PRELOAD"] = ",".join(_CONFIG.get("preload", []))

for _module in filter(None, os.environ.get("ENGINE_WORKER_PRELOAD", "").split(",")):
    importlib.import_module(_module)


def _generate(engine: Any, request: dict[str, Any]) -> list[dict[str, Any]]:
    sampling = {
        "temperature": 0.0,
        "max_new_tokens": int(request["max_new_tokens"]),
        "ignore_eos": True,
    }
    sampling.update(request.get("sampling_params") or {})
    outputs = engine.generate(
        input_ids=[list(map(int, p)) for p in request["prompts"]],
        sampling_params=sampling,
        return_logprob=True,
        top_logprobs_num=int(request.get("top_logprobs_num", 0)),
    )
    results = []
    for out in outputs:
        meta = out["meta_info"]
        entry: dict[str, Any] = {
            "output_ids": [int(t) for t in out["output_ids"]],
            "output_logprobs": [float(lp) for lp, _tok, _txt in meta["output_token_logprobs"]],
            "cached_tokens": int(meta.get("cached_tokens") or 0),
            "prompt_tokens": int(meta["prompt_tokens"]),
            "finish_reason": meta.get("finish_reason"),
        }
        if request.get("top_logprobs_num"):
            entry["output_top_logprobs"] = [
                [(float(lp), int(tok)) for lp, tok, _txt in step]
                for step in meta["output_top_logprobs"]
            ]
        results.append(entry)
    return results


def main() -> None:
    from multiprocessing.connection import Listener

    listener = Listener(_CONFIG["address"], family="AF_UNIX",
                        authkey=bytes.fromhex(_CONFIG["authkey"]))
    conn = listener.accept()
    engine = None
    try:
        start = time.monotonic()
        try:
            import sglang

            engine = sglang.Engine(**_CONFIG["engine_kwargs"])
            conn.send({"ok": True, "startup_s": time.monotonic() - start,
                       "sglang_version": sglang.__version__, "pid": os.getpid()})
        except BaseException:
            conn.send({"ok": False, "error": traceback.format_exc()})
            raise
        while True:
            request = conn.recv()
            op = request.get("op")
            try:
                if op == "shutdown":
                    break
                if op == "ping":
                    reply: dict[str, Any] = {"ok": True}
                elif op == "generate":
                    reply = {"ok": True, "results": _generate(engine, request)}
                else:
                    reply = {"ok": False, "error": f"unknown op {op!r}"}
            except Exception:
                reply = {"ok": False, "error": traceback.format_exc()}
            conn.send(reply)
    finally:
        if engine is not None:
            engine.shutdown()
        with contextlib.suppress(OSError):
            conn.send({"ok": True, "shutdown": True})
        conn.close()
        listener.close()


if __name__ == "__main__":
    main()
