"""Fixtures of the events tests: a running NVIDIA Dynamo KV indexer, one per module that
asks for it (only modules that checked the indexer is installed do)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the module needs the events extra; only the Dynamo tests load it
    from .dynamo_indexer import Indexer

REJECTIONS = ("Failed to find parent", "Block not published", "Failed to decode",
              "skipping", "ERROR")
"""Warnings Dynamo logs when it drops events it cannot use; none may ever appear."""


@pytest.fixture(scope="module")
def indexer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexer]:
    from .dynamo_indexer import Indexer

    server = Indexer(tmp_path_factory.mktemp("dynamo") / "indexer.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()
    log = server.log()
    assert not [line for line in log.splitlines() if any(r in line for r in REJECTIONS)], log
