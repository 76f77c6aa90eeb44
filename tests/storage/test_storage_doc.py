"""The two-engine example of docs/storage.md is executable documentation: run it as a
doctest against the session's real redis-server (its unix socket given as REDIS_SOCKET)."""

import doctest
from pathlib import Path

from .servers import RedisServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "storage.md"


def test_the_two_engine_example_runs_as_written(redis_server: RedisServer) -> None:
    result = doctest.testfile(str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS,
                              globs={"REDIS_SOCKET": redis_server.socket})
    assert result.attempted >= 25
    assert result.failed == 0
