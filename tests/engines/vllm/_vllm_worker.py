"""One vLLM engine (``vllm.LLM``, its engine core in this process) in a process of its own,
driven over a local socket by ``engine.py``.

Started as ``python _vllm_worker.py CONFIG.json`` in a new session, so the test process can
kill it whole. The config names the socket, the auth key and the engine's keyword arguments
(``kv_transfer_config`` as a dict). Messages are pickled dicts: ``{"op": "generate", ...}``,
``{"op": "stats"}``, ``{"op": "close_cache"}`` (the connector's cache settles L3's writes and
closes), ``{"op": "shutdown"}``; each gets one reply with ``ok`` and the result
or ``error`` (a traceback).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any


def build(kwargs: dict[str, Any]) -> Any:
    from vllm import LLM
    from vllm.config import KVTransferConfig

    kwargs = dict(kwargs)
    if kwargs.get("kv_transfer_config") is not None:
        kwargs["kv_transfer_config"] = KVTransferConfig(**kwargs["kv_transfer_config"])
    return LLM(**kwargs)


def generate(llm: Any, request: dict[str, Any]) -> list[dict[str, Any]]:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    params = SamplingParams(temperature=0.0, max_tokens=int(request["max_new_tokens"]),
                            logprobs=0, ignore_eos=True, detokenize=False)
    salts = request.get("salts") or [None] * len(request["prompts"])
    prompts = []
    for tokens, salt in zip(request["prompts"], salts):
        prompt = TokensPrompt(prompt_token_ids=[int(t) for t in tokens])
        if salt is not None:
            prompt["cache_salt"] = salt
        prompts.append(prompt)
    results = []
    for out in llm.generate(prompts, params, use_tqdm=False):
        completion = out.outputs[0]
        tokens = [int(t) for t in completion.token_ids]
        results.append({
            "output_ids": tokens,
            "output_logprobs": [float(step[t].logprob)
                                for step, t in zip(completion.logprobs, tokens)],
            "cached_tokens": int(out.num_cached_tokens or 0),
            "prompt_tokens": len(out.prompt_token_ids),
        })
    return results


def audit(llm: Any) -> Any:
    """The connector's scheduler side, its cache audited; ``None`` without the connector."""
    scheduler = llm.llm_engine.engine_core.engine_core.scheduler
    side = getattr(scheduler.connector, "scheduler", None)
    if side is not None:
        side.cache.check_invariants()
    return side


def stats(llm: Any) -> dict[str, Any]:
    """Whether vLLM's own prefix caching is on; the connector's counters and times."""
    scheduler = llm.llm_engine.engine_core.engine_core.scheduler
    reply: dict[str, Any] = {
        "vllm_prefix_caching": bool(scheduler.kv_cache_manager.enable_caching)}
    side = audit(llm)
    if side is not None:
        from vllm.distributed.kv_transfer import get_kv_transfer_group

        worker = get_kv_transfer_group().worker
        cache = side.cache.stats()
        side.poll()
        restorer = side.restorer
        reply.update(restored=None if restorer is None else dict(restorer.counters))
        reply.update(counters=dict(side.counters), worker=dict(worker.counters),
                     worker_seconds=dict(worker.seconds),
                     scheduler_seconds=scheduler.connector.scheduler_seconds,
                     evicted_tokens=cache.evicted_tokens, active_leases=cache.active_leases,
                     tracked_requests=side.num_requests)
    return reply


def main() -> None:
    from multiprocessing.connection import Listener

    with open(sys.argv[1]) as f:
        config = json.load(f)
    listener = Listener(config["address"], family="AF_UNIX",
                        authkey=bytes.fromhex(config["authkey"]))
    conn = listener.accept()
    try:
        start = time.monotonic()
        try:
            llm = build(config["engine_kwargs"])
            conn.send({"ok": True, "startup_s": time.monotonic() - start, "pid": os.getpid()})
        except BaseException:
            conn.send({"ok": False, "error": traceback.format_exc()})
            raise
        while True:
            request = conn.recv()
            op = request.get("op")
            if op == "shutdown":
                break
            try:
                if op == "generate":
                    results = generate(llm, request)
                    audit(llm)  # after every batch: an audit failure fails the call
                    reply: dict[str, Any] = {"ok": True, "results": results}
                elif op == "stats":
                    reply = {"ok": True, "stats": stats(llm)}
                elif op == "close_cache":  # L3's writes settle, its store closes
                    side = audit(llm)
                    if side is not None:
                        side.close()
                    reply = {"ok": True}
                else:
                    reply = {"ok": False, "error": f"unknown op {op!r}"}
            except Exception:
                reply = {"ok": False, "error": traceback.format_exc()}
            conn.send(reply)
    finally:
        conn.send({"ok": True, "shutdown": True})
        conn.close()
        listener.close()


if __name__ == "__main__":
    main()
