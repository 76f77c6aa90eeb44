"""SGLang's own radix-attention stress test, unchanged, against ``--radix-cache-backend
radixkv`` on SGLang's real HTTP server (CPU).

The workload is ``run_radix_attention_test`` from SGLang's
``sglang/test/kits/radix_cache_server_kit.py``, imported and called as SGLang's
``test_radix_attention`` does (its FCFS variant): one POST to ``/generate`` of a random
prefix tree of 401 requests (a shared 117-token root, branches of up to 256 repeated tokens,
up to 256 new tokens each, token ids up to 31999), on a server launched with
``--chunked-prefill-size 128 --max-total-tokens 20000 --schedule-policy fcfs`` and
``SGLANG_TEST_RETRACT=1`` (decode retracts requests every few steps) and
``SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY=1`` (a KV pool leak during any step stops the
scheduler, and the request then fails). The kit asserts only HTTP 200; this test also
checks, from the server and its log, that

- the server still answers afterwards (``/health_generate`` runs a generation when idle,
  and a small ``/generate`` returns tokens),
- the tree cache was radixkv's (``Tree cache initialized: source=registered('radixkv')``),
- retraction happened (``Testing retraction. #retracted_reqs: N`` with N > 0),
- no memory-leak report (busy or idle check) and no traceback appears in the log.

Differences from SGLang's own run, none of which touch the kit's workload: the model is the
tiny seeded Llama of ``checkpoint.py`` written with a 32000-token vocabulary (the kit's
token ids go up to 31999) and its position limit raised to ``CONTEXT_LENGTH`` by
``--json-model-override-args`` (the kit's deepest prompt plus its new tokens can pass the
checkpoint's 2048; SGLang would answer 400 for that request), the CPU engine flags of
``harness.CPU_ENGINE_KWARGS``, and ``random.seed(SEED)`` before the kit draws its tree, so a
failure can be replayed (``RADIXKV_STRESS_SEED`` picks another tree).

Slow: about 15 minutes on a 2-core machine. The kit's request has no timeout of its own; it
runs in a thread bounded by ``RADIXKV_STRESS_TIMEOUT_S`` (default 3600), after which the
server is killed and the test fails with its log.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .checkpoint import write_checkpoint
from .harness import ENGINE_SKIP_REASON, engine_stack_missing
from .server import ServerProcess

pytest.importorskip("sglang", reason=ENGINE_SKIP_REASON)
pytest.importorskip("sgl_kernel", reason=ENGINE_SKIP_REASON)

from sglang.test.kits.radix_cache_server_kit import run_radix_attention_test

VOCAB_SIZE = 32000  # the kit draws token ids from randint(0, 31999)
CONTEXT_LENGTH = 8192  # the kit's longest request (prompt + new tokens) is ~2500 tokens
SEED = int(os.environ.get("RADIXKV_STRESS_SEED", "0"))
TIMEOUT_S = float(os.environ.get("RADIXKV_STRESS_TIMEOUT_S", "3600"))

# SGLang's test_radix_attention, FCFS variant.
SERVER_ARGS = {
    "chunked_prefill_size": 128,
    "max_total_tokens": 20000,
    "schedule_policy": "fcfs",
}
SERVER_ENV = {
    "SGLANG_TEST_RETRACT": "1",
    "SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY": "1",
}

BACKEND_LINE = re.compile(r"Tree cache initialized: source=registered\('radixkv'\).*")
RETRACT_LINE = re.compile(r"(?:Testing retraction|KV cache pool is full\. Retract requests)"
                          r"\. #retracted_reqs: (\d+).*")
LEAK_LINE = re.compile(r".*(?:memory leak detected|mem leak detected|KV double free"
                       r"|use-after-free).*", re.IGNORECASE)


@pytest.fixture(scope="module")
def checkpoint_32k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if engine_stack_missing():
        pytest.skip(ENGINE_SKIP_REASON)
    return write_checkpoint(tmp_path_factory.mktemp("tiny-llama-32k"), seed=0,
                            vocab_size=VOCAB_SIZE)


@pytest.fixture(scope="module")
def server(checkpoint_32k: Path, engine_logs: Path) -> Iterator[ServerProcess]:
    with ServerProcess(checkpoint_32k, log_dir=engine_logs, env=SERVER_ENV,
                       radix_cache_backend="radixkv",
                       json_model_override_args={"max_position_embeddings": CONTEXT_LENGTH},
                       **SERVER_ARGS) as srv:
        yield srv


def _run_kit(server: ServerProcess) -> float:
    """``run_radix_attention_test(base_url)`` in a thread, bounded by TIMEOUT_S; its
    duration in seconds. An exception in the kit is re-raised here with the server's log."""
    error: list[BaseException] = []

    def kit() -> None:
        try:
            random.seed(SEED)
            run_radix_attention_test(server.base_url)
        except BaseException as exc:  # re-raised in the test's thread
            error.append(exc)

    t0 = time.monotonic()
    thread = threading.Thread(target=kit, name="radix-attention-kit", daemon=True)
    thread.start()
    thread.join(TIMEOUT_S)
    elapsed = time.monotonic() - t0
    if thread.is_alive():
        server.close()  # drops the kit's connection
        thread.join(30)
        pytest.fail(f"run_radix_attention_test did not finish within {TIMEOUT_S:.0f} s\n"
                    f"{server.log_tail()}")
    if error:
        raise AssertionError(f"run_radix_attention_test failed after {elapsed:.0f} s "
                             f"(seed {SEED}): {error[0]!r}\n{server.log_tail()}") from error[0]
    return elapsed


def test_sglang_radix_attention_kit_on_radixkv(server: ServerProcess) -> None:
    elapsed = _run_kit(server)
    print(f"\nrun_radix_attention_test (seed {SEED}) took {elapsed:.0f} s; "
          f"server log: {server.log_path}")

    # The server survived: an idle /health_generate runs a one-token generation, and a
    # small /generate answers with tokens.
    assert server.alive(), f"server exited\n{server.log_tail()}"
    assert server.get("/health_generate", timeout=120) == 200, server.log_tail()
    status, body = server.post("/generate", {
        "input_ids": [37] * 117 + [5, 6, 7],
        "sampling_params": {"max_new_tokens": 4, "temperature": 0},
    }, timeout=120)
    assert status == 200, f"/generate answered {status}: {body}\n{server.log_tail()}"
    assert len(body["output_ids"]) == 4, body
    time.sleep(2)  # let the idle memory check run at least once more

    log = server.log_text()
    backend = BACKEND_LINE.search(log)
    assert backend, f"radixkv's tree cache was not built\n{server.log_tail()}"
    retracted = [int(m.group(1)) for m in RETRACT_LINE.finditer(log)]
    assert sum(retracted) > 0, (f"no request was retracted ({len(retracted)} retraction "
                                f"steps)\n{server.log_tail()}")
    leaks = LEAK_LINE.findall(log)
    assert not leaks, "memory leak reported:\n" + "\n".join(leaks[:20])
    assert "Traceback" not in log, f"traceback in the server log\n{server.log_tail(200)}"
    print(f"{backend.group(0)}\n{len(retracted)} retraction steps, {sum(retracted)} "
          f"requests retracted; no leak report")
