"""Pages for the storage tests: host buffers of known bytes and fresh keys."""

from __future__ import annotations

import uuid

import numpy as np

from radixkv.storage import PageRows, StorageLayout

PAGE = 4
"""Rows (slots) a page."""
ROW = (2, 8)
"""Shape of one slot's row (e.g. K and V of 8 elements)."""


def layout(**fields: object) -> StorageLayout:
    """A layout of a model nobody else uses: keys no other test shares."""
    values: dict[str, object] = dict(model=f"test-{uuid.uuid4().hex}", dtype="float16",
                                     page_size=PAGE, component="full", layers=(0, 4),
                                     row_shape=ROW)
    values.update(fields)
    return StorageLayout(**values)  # type: ignore[arg-type]


def keys(count: int, **fields: object) -> list[str]:
    return layout(**fields).token_keys(list(range(count * PAGE)))


def host(pages: int, seed: int = 0) -> np.ndarray:
    """A host buffer of ``pages`` pages of random float16 rows."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((pages * PAGE, *ROW)).astype(np.float16)


def rows(buffer: np.ndarray, pages: list[int] | range) -> PageRows:
    """The rows of ``pages`` (page p = slots p*PAGE .. p*PAGE+PAGE-1) of ``buffer``."""
    slots = np.array([np.arange(p * PAGE, (p + 1) * PAGE) for p in pages], dtype=np.int64)
    return PageRows(buffer, slots.reshape(len(pages), PAGE))


def empty(pages: int) -> np.ndarray:
    return np.zeros((pages * PAGE, *ROW), dtype=np.float16)


def assert_hits_exact(flags: list[bool], target: np.ndarray, source: np.ndarray) -> None:
    """Every page flagged as read equals its source bit for bit; every other page of
    ``target`` (zeros before the read) is still untouched."""
    for page, ok in enumerate(flags):
        window = slice(page * PAGE, (page + 1) * PAGE)
        if ok:
            np.testing.assert_array_equal(target[window], source[window])
        else:
            assert not target[window].any()
