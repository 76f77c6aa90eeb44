"""The storage-tier exactness check catches what goes wrong with an L3: a hit rule that
checks only FULL's pages, and a layout whose keys do not tell one model's pages (or one
component's) from another's, each make cached logits differ from the uncached run. Keys
that do tell them apart make another model's pages plain misses. (The same setups
unbroken pass: test_storage_exactness.py.)"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from radixkv import CacheConfig
from radixkv.model import VerifyReport
from radixkv.model.reference import shared_reference
from radixkv.storage import FileStorageConfig, StorageLayout

from .storage_support import (
    RecordingStorage,
    broken_hit_rule,
    failures,
    file_store,
    lossy_store,
    other_model,
    run,
    storage_cache,
)
from .support import COMBOS, combo_id, model_reference

WINDOWED = [combo for combo in COMBOS if "swa" in combo or "chunked" in combo]


def _caught(report: VerifyReport) -> None:
    """Cached logits differ from the uncached run while L3 really served reuse (the check
    did not fail by never restoring)."""
    assert not report.passed
    mismatch = next(group for group in report.groups if not group.passed).mismatches[0]
    assert mismatch.rows > 0 and mismatch.max_diff > 0
    assert report.storage is not None and report.storage.restored_tokens > 0


@pytest.mark.parametrize("combo", WINDOWED, ids=combo_id)
def test_a_hit_rule_that_checks_only_full_pages_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, combo: tuple[str, ...]
) -> None:
    """On a store that lost some pages (LossyStorage), FULL's page may be there where
    SWA's or chunked's is not. A hit rule that cuts where FULL's pages end restores
    host-only nodes whose window KV was never read: the host slots hold stale rows (a
    get of a missing page writes nothing), and they reach the model."""
    with broken_hit_rule(monkeypatch):
        report = run(model_reference(combo), storage_cache(combo, 16),
                     lossy_store(tmp_path / "l3"))
    _caught(report)


@pytest.mark.parametrize("combo", WINDOWED, ids=combo_id)
def test_the_real_hit_rules_stay_exact_on_a_store_that_lost_pages(
    tmp_path: Path, combo: tuple[str, ...]
) -> None:
    report = run(model_reference(combo), storage_cache(combo, 16),
                 lossy_store(tmp_path / "l3"))
    assert report.passed, failures(report)
    assert report.storage is not None and report.storage.restored_tokens > 0


def _second_model(combo: tuple[str, ...], name: str | None) -> tuple[CacheConfig, object]:
    model = other_model(model_reference(combo).decoder.config)
    return storage_cache(combo, 16, name=name, model=model), shared_reference(model)


@pytest.mark.parametrize("combo", [COMBOS[0], COMBOS[-1]], ids=combo_id)
def test_another_models_pages_are_only_misses(tmp_path: Path, combo: tuple[str, ...]) -> None:
    """Model B (other weights, the same architecture) runs on a store model A filled: its
    layouts' model id names its weights, so its keys differ from A's: it reads only keys
    of its own (pages it wrote itself during the run) and stays exact."""
    store = tmp_path / "l3"
    first = run(model_reference(combo), storage_cache(combo, 16), file_store(store))
    config, reference = _second_model(combo, None)
    recording = RecordingStorage(FileStorageConfig(root=store))
    after = run(reference, config, recording)  # type: ignore[arg-type]
    assert first.passed and after.passed, failures(after)
    assert after.storage is not None and after.storage.restored_tokens > 0
    first_digests = {item.digest for item in storage_cache(combo, 16).storage.layouts}  # type: ignore[union-attr]
    second_digests = {item.digest for item in config.storage.layouts}  # type: ignore[union-attr]
    assert not first_digests & second_digests
    stored = {path.name.split("-")[0] for path in store.rglob("*-*")}
    assert first_digests <= stored  # A's pages are there to be read ...
    read = {key.split("-")[0] for key in recording.read_keys}
    assert read and read <= second_digests  # ... and B never asked for one


@pytest.mark.parametrize("combo", [COMBOS[0], COMBOS[-1]], ids=combo_id)
def test_a_model_id_shared_by_two_models_reads_the_other_models_pages(
    tmp_path: Path, combo: tuple[str, ...]
) -> None:
    """Broken: both engines name their model by architecture alone ("tiny-ref"), not by
    its weights, so model B's keys are model A's: B restores A's KV and states."""
    store = tmp_path / "l3"
    first = run(model_reference(combo), storage_cache(combo, 16, name="tiny-ref"),
                file_store(store))
    assert first.passed  # the id alone is no fault: one model on its own store is exact
    config, reference = _second_model(combo, "tiny-ref")
    _caught(run(reference, config, file_store(store)))  # type: ignore[arg-type]


class ComponentBlindLayout(StorageLayout):
    """Broken: keys from a digest that leaves the component out, so components whose rows
    have the same shape share keys (their puts overwrite each other's pages)."""

    def keys(self, page_digests: object) -> list[str]:
        blind = StorageLayout(model=self.model, dtype=self.dtype, page_size=self.page_size,
                              component="kv", layers=self.layers, row_shape=self.row_shape,
                              layout=self.layout.split("; kinds")[0],
                              page_hash=self.page_hash, bigram=self.bigram)
        return blind.keys(page_digests)  # type: ignore[arg-type]


def test_a_layout_that_leaves_the_component_out_of_its_keys_fails(tmp_path: Path) -> None:
    """full+swa+chunked's default stack (swa, chunked, full) has one layer per component,
    so FULL, SWA and chunked rows have one shape and a component-blind layout gives their
    pages of one prefix one key: a restore reads one layer's KV into another's slots."""
    combo = ("full", "swa", "chunked")
    config = storage_cache(combo, 16)
    assert config.storage is not None
    blind = tuple(ComponentBlindLayout(**{name: getattr(item, name) for name in (
        "model", "dtype", "page_size", "component", "layers", "row_shape", "layout",
        "page_hash", "bigram")}) for item in config.storage.layouts)
    broken = replace(config, storage=replace(config.storage, layouts=blind))
    _caught(run(model_reference(combo), broken, file_store(tmp_path / "l3")))
