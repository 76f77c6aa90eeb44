"""StorageWorker: runs a backend's calls on a background I/O thread, with futures.

A scheduler thread submits and moves on; it blocks on the network only when it chooses to
wait on a future (``future.result(timeout)``). Arguments are checked on the caller's thread,
so a bad call raises there and nothing is queued; the futures themselves never fail (the
backend turns store failures into misses).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

from .backend import StorageBackend, checked_keys
from .backend_stats import StorageStats
from .rows import PageRows

_T = TypeVar("_T")


class _Inline(Executor):
    """Runs each call on the caller's thread as it is submitted (its future is done on
    return): ``StorageTier(io_thread=False)``."""

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        future: Future[_T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # the future carries it, as a thread's would
            future.set_exception(error)
        return future


class StorageWorker:
    """One thread in front of one backend (or, with ``thread=False``, the caller's own);
    calls run in submission order. ``close()`` finishes what was submitted, then closes the
    backend (also as a context manager)."""

    def __init__(self, backend: StorageBackend, *, thread: bool = True) -> None:
        self._backend = backend
        self._pool: Executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="radixkv-storage") if thread else _Inline()

    @property
    def backend(self) -> StorageBackend:
        return self._backend

    def exists_prefix(self, keys: Sequence[str]) -> Future[int]:
        """:meth:`StorageBackend.exists_prefix` off this thread."""
        return self._pool.submit(self._backend.exists_prefix, checked_keys(keys))

    def get_into(self, keys: Sequence[str], rows: PageRows) -> Future[list[bool]]:
        """:meth:`StorageBackend.get_into` off this thread; the rows must not be read or
        reused until the future is done."""
        checked = checked_keys(keys)
        rows.check_keys(len(checked), writing=True)
        return self._pool.submit(self._backend.get_into, checked, rows)

    def put_from(self, keys: Sequence[str], rows: PageRows) -> Future[list[bool]]:
        """:meth:`StorageBackend.put_from` off this thread; the rows must not change until
        the future is done (the host tier keeps them locked)."""
        checked = checked_keys(keys)
        rows.check_keys(len(checked))
        return self._pool.submit(self._backend.put_from, checked, rows)

    def call(self, job: Callable[[StorageBackend], _T]) -> Future[_T]:
        """Run ``job(backend)`` on the thread, after what was submitted before: several
        calls that belong together (an L3 lookup's queries) in one job."""
        return self._pool.submit(job, self._backend)

    def remove(self, keys: Sequence[str]) -> Future[None]:
        return self._pool.submit(self._backend.remove, checked_keys(keys))

    def clear(self) -> Future[None]:
        return self._pool.submit(self._backend.clear)

    def stats(self) -> StorageStats:
        """The backend's counters, read on the caller's thread."""
        return self._backend.stats()

    def close(self) -> None:
        """Run what was submitted, stop the thread, close the backend (what its ``close``
        raises is a counted fault); idempotent."""
        self._pool.shutdown(wait=True)
        self._backend.shutdown()

    def __enter__(self) -> StorageWorker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
