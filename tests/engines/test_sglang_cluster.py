"""Two real SGLang engines with the radixkv backend behind a real KV-aware router
(issue #31 item 5, the routing half).

Each engine is SGLang's HTTP server (``python -m sglang.launch_server``, CPU flags of
``harness.CPU_ENGINE_KWARGS``, ``--radix-cache-backend radixkv``, ``--page-size 4``, a small
``--max-total-tokens`` so that a flood of other prompts evicts) with KV events on
(``--kv-events-config``) and ``RADIXKV_SGLANG_EVENTS_ENDPOINT`` set: the backend publishes
radixkv's events on its own ``KVEventPublisher`` (vLLM's ZMQ wire). The router is
``vllm-router`` from PyPI (``.venv-router``, see ``cluster.py``) with ``--policy kv_aware``
and one ``--kv-event-source WORKER_URL=tcp://127.0.0.1:PORT`` per engine; its source
connects, so each publisher binds its loopback address (``RADIXKV_SGLANG_EVENTS_BIND=1``: a
concrete address such as ``tcp://127.0.0.1:PORT`` would connect under vLLM's rule).
Requests are SGLang's native ``/generate`` with ``input_ids``: the router does not tokenize
for HTTP workers; it reads the token ids of the request.

Which engine served a request is read from the engines' own access logs (``POST /generate``
lines, counted before and after), the router's choice and credit from its debug log line
``KV prefix decision ... worker=... credited_prefix_tokens=N``, and the cache hit from the
reply's ``meta_info.cached_tokens``.

- ``test_router_routes_on_radixkv_events``: a shared prefix sent through the router lands
  on engine H; later requests with that prefix go to H with the prefix credited and cached;
  a second prefix put on the other engine by a direct request is routed there; after H is
  flooded with other prompts (direct requests) and evicts the prefix, the router credits
  nothing for it and H no longer caches it.
- ``test_connecting_publisher_is_reported``: an engine whose publisher connects
  (``tcp://127.0.0.1:PORT``) to a router source that also connects: nobody binds, no event
  arrives (the router says nothing and credits nothing); radixkv's WARNING in the engine's
  log is what reports it.

Slow: each engine starts in 1-3 minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import importlib.util
import random
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from .cluster import ROUTER_BIN, ROUTER_SKIP_REASON, Router, SGLangServer, free_port
from .harness import ENGINE_SKIP_REASON, group_processes

pytest.importorskip("sglang", reason=ENGINE_SKIP_REASON)
pytest.importorskip("sgl_kernel", reason=ENGINE_SKIP_REASON)
for _module in ("zmq", "msgpack"):
    if importlib.util.find_spec(_module) is None:
        pytest.skip(f"radixkv's events extra is missing from this interpreter ({_module}): "
                    f"pip install 'radixkv[events]' (pyzmq, msgpack) into .venv-sglang",
                    allow_module_level=True)
if not ROUTER_BIN.exists():
    pytest.skip(ROUTER_SKIP_REASON, allow_module_level=True)

PAGE = 4                # SGLang's page size = radixkv's block size = the router's block size
POOL_TOKENS = 1024      # --max-total-tokens: the flood below evicts
PREFIX = 64             # shared-prefix tokens (16 pages)
SUFFIX = 8
FLOOD = (6, 300)        # 6 direct prompts of 300 distinct tokens on the holder: 1800 > 1024
SETTLE_S = 3.0          # events go out at the engine's next step (idle check: < 1 s)
SERVER_ARGS: dict[str, Any] = {"page_size": PAGE, "max_total_tokens": POOL_TOKENS}

_DECISION = re.compile(r'KV prefix decision outcome="(?P<outcome>[^"]*)" '
                       r'worker="(?P<worker>[^"]*)" input_tokens=(?P<input>\d+) '
                       r'new_prefill_tokens=(?P<new>\d+) '
                       r'credited_prefix_tokens=(?P<credited>\d+)')


def tokens(seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(3, 500) for _ in range(n)]


def served(server: SGLangServer) -> int:
    """How many ``/generate`` requests the server has answered (its access log)."""
    return server.log_text().count('"POST /generate HTTP/1.1" 200')


def through_router(router: Router, servers: list[SGLangServer], input_ids: list[int]
                   ) -> tuple[SGLangServer, dict[str, Any], dict[str, Any]]:
    """Send ``input_ids`` through the router: (the engine that served it, the router's
    decision, the reply's meta_info)."""
    mark = len(router.log_text())
    before = [served(s) for s in servers]
    reply = router.generate(input_ids, max_new_tokens=1)
    deadline = time.monotonic() + 10
    while True:
        after = [served(s) for s in servers]
        decisions = router.decisions(mark)
        if (sum(after) > sum(before) and decisions) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    hit = [s for s, b, a in zip(servers, before, after, strict=True) if a > b]
    assert len(hit) == 1, f"served by {[s.name for s in hit]} (counts {before} -> {after})"
    assert len(decisions) == 1, decisions
    found = _DECISION.search(decisions[0])
    assert found, decisions[0]
    decision = {k: (v if k in ("outcome", "worker") else int(v))
                for k, v in found.groupdict().items()}
    meta = reply["meta_info"]
    print(f"  {len(input_ids)} tokens -> {hit[0].name}: cached_tokens={meta['cached_tokens']}"
          f" | router: {decisions[0][decisions[0].index('KV prefix decision'):]}")
    return hit[0], decision, meta


def wait_subscribed(router: Router, servers: list[SGLangServer], timeout_s: float = 60
                    ) -> None:
    """Until the router's subscriber has seen a batch (a heartbeat at least) from each."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = router.clean_log()
        missing = [s.name for s in servers
                   if f"live sequence advanced source={s.base_url}" not in text]
        if not missing:
            return
        assert time.monotonic() < deadline, (
            f"no KV event batch reached the router from {missing} in {timeout_s:.0f} s\n"
            f"{router.log_tail()}")
        time.sleep(1.0)


def start_servers(checkpoint_dir: Path, log_dir: Path, specs: dict[str, str],
                  bind: bool | None = None) -> dict[str, SGLangServer]:
    """Start the servers concurrently: ``specs`` maps a label to its events endpoint;
    ``bind``: whether the publishers bind (``None``: vLLM's rule)."""
    with ThreadPoolExecutor(len(specs)) as pool:
        futures = {label: pool.submit(SGLangServer, checkpoint_dir, events_endpoint=endpoint,
                                      events_bind=bind, log_dir=log_dir, label=label,
                                      **SERVER_ARGS)
                   for label, endpoint in specs.items()}
        servers: dict[str, SGLangServer] = {}
        errors: list[BaseException] = []
        for label, future in futures.items():
            try:
                servers[label] = future.result()
            except BaseException as exc:
                errors.append(exc)
    if errors:
        for server in servers.values():
            server.close()
        raise errors[0]
    for server in servers.values():
        print(f"{server.name}: {server.base_url} (pid {server.pid}), events "
              f"{server.events_endpoint}, up in {server.startup_s:.0f} s, log {server.log_path}")
    return servers


@pytest.fixture(scope="module")
def cluster_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cluster-logs")


def close_all(processes: list[Any]) -> None:
    """Close each process and check that nothing of its process group is left."""
    groups = [p.pid for p in processes if p.pid is not None]
    for process in processes:
        process.close()
    left = {pgid: group_processes(pgid) for pgid in groups}
    assert not any(left.values()), f"processes left behind: {left}"


@pytest.fixture
def cluster(checkpoint_dir: Path, cluster_logs: Path
            ) -> Iterator[tuple[Router, list[SGLangServer]]]:
    ports = {"A": free_port(), "B": free_port()}
    servers = start_servers(checkpoint_dir, cluster_logs,
                            {label: f"tcp://127.0.0.1:{port}" for label, port in ports.items()},
                            bind=True)
    a, b = servers["A"], servers["B"]
    processes: list[Any] = [a, b]
    try:
        router = Router([a.base_url, b.base_url],
                        {a.base_url: f"tcp://127.0.0.1:{ports['A']}",
                         b.base_url: f"tcp://127.0.0.1:{ports['B']}"},
                        log_dir=cluster_logs, block_size=PAGE)
        processes.insert(0, router)
        print(f"vllm-router: {router.base_url} (pid {router.pid}), up in "
              f"{router.startup_s:.1f} s, log {router.log_path}")
        wait_subscribed(router, [a, b])
        yield router, [a, b]
    finally:
        close_all(processes)


def test_router_routes_on_radixkv_events(cluster: tuple[Router, list[SGLangServer]]) -> None:
    router, servers = cluster
    prefix = tokens(1, PREFIX)

    print("1. the shared prefix, first time, through the router:")
    holder, decision, meta = through_router(router, servers, prefix + tokens(10, SUFFIX))
    assert decision["credited"] == 0 and meta["cached_tokens"] == 0
    other = servers[1 - servers.index(holder)]
    time.sleep(SETTLE_S)

    print(f"2. the same prefix again (it sits on {holder.name}):")
    for i in range(3):
        server, decision, meta = through_router(router, servers, prefix + tokens(20 + i, SUFFIX))
        assert server is holder, f"request {i} went to {server.name}, not {holder.name}"
        assert decision["worker"] == holder.base_url
        assert decision["credited"] == PREFIX, decision
        assert meta["cached_tokens"] == PREFIX, meta
        time.sleep(SETTLE_S)

    print(f"3. another prefix, put on {other.name} by a direct request:")
    second = tokens(2, PREFIX)
    other.generate(second + tokens(30, SUFFIX))
    time.sleep(SETTLE_S)
    server, decision, meta = through_router(router, servers, second + tokens(31, SUFFIX))
    assert server is other, f"went to {server.name}, not {other.name}"
    assert decision["worker"] == other.base_url and decision["credited"] == PREFIX, decision
    assert meta["cached_tokens"] == PREFIX, meta

    count, length = FLOOD
    print(f"4. {holder.name} flooded with {count} direct prompts of {length} tokens "
          f"(pool {POOL_TOKENS} tokens):")
    for seed in range(100, 100 + count):
        holder.generate(tokens(seed, length))
    time.sleep(SETTLE_S)
    print("5. the first prefix again, through the router:")
    server, decision, meta = through_router(router, servers, prefix + tokens(40, SUFFIX))
    assert decision["credited"] == 0, f"the router still credits the evicted prefix: {decision}"
    assert meta["cached_tokens"] == 0, meta
    print(f"   credit gone: routed to {server.name} with credited_prefix_tokens=0")

    for server in servers:
        assert server.alive(), server.log_tail()
        assert "Traceback" not in server.log_text(), server.log_tail(120)
    assert router.alive(), router.log_tail()


def test_connecting_publisher_is_reported(checkpoint_dir: Path, cluster_logs: Path) -> None:
    """Publisher and router both connect: nobody binds. The router stays silent and credits
    nothing; radixkv's publisher logs a WARNING naming the endpoint."""
    port = free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    server = start_servers(checkpoint_dir, cluster_logs, {"C": endpoint})["C"]
    processes: list[Any] = [server]
    try:
        router = Router([server.base_url], {server.base_url: endpoint}, log_dir=cluster_logs,
                        block_size=PAGE)
        processes.insert(0, router)
        prefix = tokens(3, PREFIX)
        through_router(router, [server], prefix + tokens(50, SUFFIX))
        time.sleep(SETTLE_S)
        _, decision, meta = through_router(router, [server], prefix + tokens(51, SUFFIX))
        assert meta["cached_tokens"] == PREFIX  # the engine has it ...
        assert decision["credited"] == 0        # ... the router never heard of it
        text = router.clean_log()
        assert f"live sequence advanced source={server.base_url}" not in text
        complaints = [line for line in text.splitlines()
                      if " WARN " in line or " ERROR " in line]
        print(f"router: subscriber on {endpoint}, no batch received; its WARN/ERROR "
              f"lines: {complaints[-3:]}")
        warnings = [line for line in server.log_text().splitlines()
                    if f"KV event publisher connects to {endpoint}" in line]
        assert warnings, f"radixkv did not report the connecting publisher\n{server.log_tail()}"
        print(f"engine log: {warnings[0][:400]}")
        assert "vllm-router" in warnings[0] and "Bind instead" in warnings[0]
    finally:
        close_all(processes)
