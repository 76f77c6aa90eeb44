"""A running NVIDIA Dynamo KV indexer (``python -m dynamo.indexer``) and its HTTP API, for
the events tests. Everything is on loopback; the process is always stopped."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from radixkv.events import KVEventPublisher

from .support import free_port


def indexer_installed() -> bool:
    """Whether ``dynamo.indexer`` (the ``ai-dynamo-runtime`` wheel) can be run."""
    try:
        return importlib.util.find_spec("dynamo.indexer") is not None
    except ModuleNotFoundError:  # no ``dynamo`` package at all
        return False


ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Indexer:
    """A running ``dynamo.indexer`` process and its HTTP API on loopback."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self, attempts: int = 3) -> None:
        for _ in range(attempts):  # the free port may be taken before the indexer binds it
            self.port = free_port()
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "dynamo.indexer", "--port", str(self.port),
                     "--threads", "1"],
                    stdout=log, stderr=subprocess.STDOUT,
                )
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self.healthy():
                    return
                time.sleep(0.05)
            self.stop()
        raise AssertionError(f"dynamo.indexer did not start:\n{self.log()}")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url("/health"), timeout=2) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.url(path), data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as reply:
                return reply.status, json.loads(reply.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def register(self, instance_id: int, model: str, pub: KVEventPublisher,
                 block_size: int) -> None:
        status, body = self.post("/register", {
            "instance_id": instance_id,
            "endpoint": pub.endpoint,
            "model_name": model,
            "block_size": block_size,
            "replay_endpoint": pub.replay_endpoint,
        })
        assert status == 201, body

    def scores(self, tokens: list[int], model: str, lora_name: str | None = None,
               cache_salt: str | None = None) -> dict[int, int]:
        """Matched tokens per instance (data-parallel rank 0) for a prompt."""
        body: dict[str, Any] = {"token_ids": tokens, "model_name": model}
        if lora_name is not None:
            body["lora_name"] = lora_name
        if cache_salt is not None:
            body["cache_salt"] = cache_salt
        status, reply = self.post("/query", body)
        assert status == 200, reply
        return {int(instance): ranks.get("0", 0) for instance, ranks in reply["scores"].items()}

    def log(self) -> str:
        """The indexer's log so far, without terminal colour codes."""
        return ANSI.sub("", self.log_path.read_text(errors="replace"))
