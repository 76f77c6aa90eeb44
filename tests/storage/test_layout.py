"""Storage keys: shared by engines of one model and layout, disjoint for anything else."""

from __future__ import annotations

import dataclasses

import pytest

from radixkv import CacheConfig, PrefixCache
from radixkv.core.hashing import page_digests, page_hash
from radixkv.errors import ConfigError, ConfigTypeError
from radixkv.storage import StorageLayout

BASE = dict(model="llama-3-8b@rev1", dtype="bfloat16", page_size=4, component="full",
            layers=(0, 32), row_shape=(2, 8, 128), layout="kv,nhd,tp0/1")
TOKENS = list(range(100, 140))
CHANGED = [("model", "llama-3-8b@rev2"), ("dtype", "float16"), ("page_size", 8),
           ("component", "swa"), ("layers", (0, 16)), ("layers", (16, 32)),
           ("row_shape", (2, 8, 64)), ("layout", "kv,nhd,tp1/2"), ("page_hash", "xxh3_128"),
           ("bigram", True)]


def make(**changes: object) -> StorageLayout:
    return StorageLayout(**{**BASE, **changes})  # type: ignore[arg-type]


def test_the_same_model_and_layout_give_the_same_keys() -> None:
    first, second = make(), make()
    assert first == second and first.digest == second.digest
    assert first.token_keys(TOKENS) == second.token_keys(TOKENS)
    assert len(first.token_keys(TOKENS)) == len(TOKENS) // 4


@pytest.mark.parametrize(("field", "value"), CHANGED)
def test_any_differing_field_gives_disjoint_keys(field: str, value: object) -> None:
    base_keys = set(make().token_keys(TOKENS))
    other_keys = set(make(**{field: value}).token_keys(TOKENS))
    assert other_keys and not base_keys & other_keys


@pytest.mark.parametrize("namespace", [("lora-1", None), (None, "tenant-a"), (None, 7),
                                       ("7", None)])
def test_a_different_namespace_gives_disjoint_keys(namespace: tuple[object, object]) -> None:
    layout = make()
    assert not set(layout.token_keys(TOKENS)) & set(layout.token_keys(TOKENS, namespace))


def test_string_and_int_namespace_parts_never_collide() -> None:
    layout = make()
    assert not set(layout.token_keys(TOKENS, (None, 7))) & set(
        layout.token_keys(TOKENS, (None, "7")))


def test_keys_of_a_prefix_are_the_leading_keys_of_the_longer_prompt() -> None:
    layout = make()
    assert layout.token_keys(TOKENS[:17]) == layout.token_keys(TOKENS)[:4]


@pytest.mark.parametrize(("hash_name", "bigram"), [("sha256", False), ("xxh3_128", False),
                                                   ("sha256", True)])
def test_token_keys_match_the_page_hashes_the_tree_keeps(hash_name: str, bigram: bool) -> None:
    cache = PrefixCache(CacheConfig(capacity=256, page_size=4, page_hash=hash_name,
                                    bigram=bigram))
    namespace = ("lora-1", "tenant-a")
    cache.finish(cache.admit(TOKENS, namespace))
    tree_node = cache.tree.node(cache.match(TOKENS, namespace).node)  # holds the whole prompt
    digests = page_digests(tree_node, cache.tree.page_bytes, page_hash(hash_name))
    layout = make(page_hash=hash_name, bigram=bigram)
    assert len(digests) == (len(TOKENS) - bigram) // 4
    assert layout.keys(digests) == layout.token_keys(TOKENS, namespace)


def test_a_key_is_the_layout_digest_and_the_hex_page_hash() -> None:
    layout = make()
    digest = bytes(range(32))
    assert layout.key(digest) == f"{layout.digest}-{digest.hex()}"
    assert len(layout.digest) == 32


def test_dtype_spellings_are_normalised() -> None:
    assert make(dtype="float16").digest == make(dtype="<f2").digest == make(dtype="e").digest
    assert make(dtype="BFloat16").digest == make(dtype="bfloat16").digest
    assert make(dtype="float16").digest != make(dtype="bfloat16").digest


@pytest.mark.parametrize(("changes", "error"), [
    (dict(model=""), ConfigError), (dict(model=3), ConfigTypeError),
    (dict(dtype=""), ConfigError), (dict(dtype=None), ConfigTypeError),
    (dict(page_size=0), ConfigError),
    (dict(page_size=True), ConfigTypeError), (dict(layers=(4, 4)), ConfigError),
    (dict(layers=[0, 4]), ConfigTypeError), (dict(layers=(-1, 4)), ConfigError),
    (dict(row_shape=(0,)), ConfigError), (dict(component=""), ConfigError),
    (dict(page_hash="md5"), ConfigError), (dict(bigram=1), ConfigTypeError)])
def test_bad_fields_raise(changes: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        make(**changes)


def test_a_layout_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        make().model = "other"  # type: ignore[misc]
