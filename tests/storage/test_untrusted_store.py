"""The raw calls a store implements are untrusted: whatever they raise or answer, the public
calls never raise, never write a row that was not checked, and count a fault of a known
kind. Driven through :class:`Scripted`, a store whose raw calls answer what a test says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from radixkv.errors import ConfigError
from radixkv.storage import FAULTS, StorageBackend, StorageWorker
from radixkv.storage.framing import frame

from .support import PAGE, empty, host, keys, rows
from .tier_support import engine

Answer = Callable[..., Any]


class Scripted(StorageBackend):
    """Each raw call runs the test's function for it (a dict of stored objects behind the
    ones a test leaves alone)."""

    def __init__(self, retry_after_s: float = 0.0, **calls: Answer) -> None:
        super().__init__(retry_after_s)
        self.objects: dict[str, bytes] = {}
        self.calls = calls
        self.removed: list[str] = []

    def _call(self, name: str, default: Answer, *args: Any) -> Any:
        return self.calls.get(name, default)(*args)

    def _exists(self, keys: list[str]) -> Any:
        return self._call("exists", lambda ks: [k in self.objects for k in ks], keys)

    def _read(self, keys: list[str], size: int) -> Any:
        return self._call("read", lambda ks: [self.objects.get(k) for k in ks], keys)

    def _write(self, keys: list[str], blobs: list[bytes]) -> Any:
        def store(ks: list[str], bs: list[bytes]) -> list[None]:
            self.objects.update(zip(ks, bs))
            return [None] * len(ks)
        return self._call("write", store, keys, blobs)

    def _remove(self, keys: list[str]) -> None:
        def drop(ks: list[str]) -> None:
            self.removed.extend(ks)
            for key in ks:
                self.objects.pop(key, None)
        self._call("remove", drop, keys)

    def _clear(self) -> None:
        self._call("clear", self.objects.clear)

    def _classify(self, error: Exception) -> str:
        return self._call("classify", lambda _e: "error", error)  # type: ignore[no-any-return]

    def _on_down(self) -> None:
        self._call("on_down", lambda: None)

    def close(self) -> None:
        self._call("close", lambda: None)


def raises(error: Exception) -> Answer:
    def call(*_args: Any) -> Any:
        raise error
    return call


def answers(value: Any) -> Answer:
    return lambda *_args: value


def counted(store: StorageBackend) -> dict[str, int]:
    faults = store.stats().faults
    assert set(faults) == set(FAULTS)
    return {kind: count for kind, count in faults.items() if count}


PRESENCE_GARBAGE = [None, "yes", 2, [True], [True, True, True], [1, 0], [None, None],
                    [True, "no"], np.array([True, True]), {0: True, 1: True}]


@pytest.mark.parametrize("garbage", PRESENCE_GARBAGE, ids=repr)
def test_a_presence_answer_that_is_not_one_bool_per_key_is_an_error_fault(
        garbage: Any) -> None:
    store = Scripted(exists=answers(garbage))
    names = keys(2)
    assert store.exists_prefix(names) == 0
    assert store.exists(names) == [False, False]
    assert counted(store) == {"error": 4}


def test_numpy_bools_are_bools() -> None:
    store = Scripted(exists=answers([np.True_, np.False_]))
    assert store.exists(keys(2)) == [True, False]
    assert counted(store) == {}


READ_GARBAGE = [None, "abc", 7, [], [b"x"], [b"x", b"y", b"z"], {0: b"x"}]


@pytest.mark.parametrize("garbage", READ_GARBAGE, ids=repr)
def test_a_read_answer_of_another_shape_is_an_error_fault_and_writes_no_row(
        garbage: Any) -> None:
    store = Scripted(read=answers(garbage))
    target = np.full((2 * PAGE, 2, 8), 3, np.float16)
    assert store.get_into(keys(2), rows(target, range(2))) == [False, False]
    assert (target == 3).all()
    assert counted(store) == {"error": 2} and store.removed == []


def test_each_read_item_is_checked_on_its_own() -> None:
    names, source = keys(8), host(8)
    whole = [frame(key, source[i * PAGE:(i + 1) * PAGE].tobytes()) for i, key in
             enumerate(names)]
    strided = memoryview(whole[7] * 2)[::2]  # the right bytes, but not a plain byte view
    items = [whole[0], bytearray(whole[1]), memoryview(whole[2]), 5, "weird", "timeout",
             whole[3], strided]  # a fine object, as bytes, bytearray and memoryview too
    store = Scripted(read=answers(items))
    target = empty(8)
    assert store.get_into(names, rows(target, range(8))) == [True, True, True, False, False,
                                                             False, False, False]
    np.testing.assert_array_equal(target[: 3 * PAGE], source[: 3 * PAGE])
    assert not target[3 * PAGE:].any()
    # item 6 is page 3's object under page 6's key: corrupt (and deleted); the others are
    # faults of the kind they name, or "error" for no kind at all
    assert counted(store) == {"error": 3, "timeout": 1, "corrupt": 1}
    assert store.removed == [names[6]]


@pytest.mark.parametrize("garbage", [None, "ok", [None], [None, None, None], 3])
def test_a_write_answer_of_another_shape_stores_nothing_as_far_as_the_caller_knows(
        garbage: Any) -> None:
    store = Scripted(write=answers(garbage))
    assert store.put_from(keys(2), rows(host(2), range(2))) == [False, False]
    assert counted(store) == {"error": 2}
    assert store.stats().put_stored == 0


def test_each_write_outcome_is_checked_on_its_own() -> None:
    store = Scripted(write=answers([None, "full", "nonsense", 0]))
    assert store.put_from(keys(4), rows(host(4), range(4))) == [True, False, False, False]
    assert counted(store) == {"full": 1, "error": 2}


@pytest.mark.parametrize("kind", ["timeout", "nonsense", None, 5, "raises"])
def test_a_raw_call_that_raises_is_a_fault_of_the_kind_its_classifier_names(
        kind: Any) -> None:
    classify = raises(ValueError("classifier broke")) if kind == "raises" else answers(kind)
    store = Scripted(exists=raises(OSError("boom")), classify=classify)
    assert store.exists_prefix(keys(3)) == 0
    assert counted(store) == {"timeout" if kind == "timeout" else "error": 3}


def test_a_down_hook_that_raises_is_counted_and_the_window_still_holds() -> None:
    store = Scripted(1e9, exists=raises(OSError("boom")), classify=answers("unavailable"),
                     on_down=raises(RuntimeError("hook broke")))  # one window for the test
    assert store.exists_prefix(keys(2)) == 0
    assert store.exists_prefix(keys(2)) == 0  # in the window: not called
    assert counted(store) == {"unavailable": 4, "error": 1}


@pytest.mark.parametrize("call", ["remove", "clear"])
def test_remove_and_clear_that_raise_are_faults(call: str) -> None:
    store = Scripted(**{call: raises(RuntimeError("no"))})
    if call == "remove":
        store.remove(keys(2))
    else:
        store.clear()
    assert counted(store) == {"error": 2 if call == "remove" else 1}
    assert store.stats().removed_pages == 0


def test_a_purge_that_raises_is_a_fault_and_the_read_still_answers() -> None:
    store = Scripted(remove=raises(RuntimeError("no")))
    names = keys(2)
    store.objects[names[0]] = b"torn"
    assert store.get_into(names, rows(empty(2), range(2))) == [False, False]
    assert counted(store) == {"corrupt": 1, "missing": 1, "error": 2}
    assert store.stats().purged_pages == 0


def test_a_close_that_raises_is_counted_when_the_worker_closes() -> None:
    store = Scripted(close=raises(RuntimeError("no")))
    StorageWorker(store).close()
    assert counted(store) == {"error": 1}


@pytest.mark.parametrize("batch", [0, -3, 2.5, True, "128"])
def test_a_store_whose_max_batch_is_no_positive_int_is_refused_when_the_cache_is_built(
        batch: Any) -> None:
    store = Scripted()
    store.max_batch = batch
    with pytest.raises(ConfigError, match="max_batch must be an int >= 1"):
        engine(store)
