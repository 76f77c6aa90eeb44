"""The reference decoder: configuration, determinism, and what each layer kind can see."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv.errors import ConfigError
from radixkv.model import DEFAULT_LAYERS, Decoder, ModelConfig, generate
from radixkv.model.model_config import combinations, default_layers


def _logits(
    layers: tuple[str, ...], prompt: list[int], window: int = 4, chunk: int = 8
) -> np.ndarray:
    decoder = Decoder(ModelConfig(layers=layers, window=window, chunk=chunk, seed=5))
    return generate(decoder, tuple(prompt), 1).logits


def _changed(prompt: list[int], position: int) -> list[int]:
    changed = list(prompt)
    changed[position] += 1
    return changed


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"layers": ()}, "at least one layer"),
        ({"layers": ("full", "mlp")}, "unknown layer kind"),
        ({"d_model": 10, "heads": 3}, "multiple of heads"),
        ({"window": 0}, "window"),
        ({"chunk": 0}, "chunk"),
        ({"vocab_size": True}, "vocab_size"),
    ],
)
def test_invalid_shapes_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ModelConfig(**settings)  # type: ignore[arg-type]


def test_default_stacks_need_exactly_their_combination() -> None:
    assert list(DEFAULT_LAYERS) == combinations()
    assert len(DEFAULT_LAYERS) == 8
    for combo, layers in DEFAULT_LAYERS.items():
        config = ModelConfig.for_components(combo)
        assert config.layers == layers
        assert config.components() == combo
        assert len(layers) <= 4
    assert DEFAULT_LAYERS[("full", "chunked")] == ("chunked", "full", "chunked")
    assert DEFAULT_LAYERS[("full", "swa", "chunked", "mamba")] == ("ssm", "swa", "chunked", "full")
    with pytest.raises(ConfigError):
        ModelConfig.for_components(("swa",))
    with pytest.raises(ConfigError, match="unsupported"):
        default_layers(("full", "conv"))


def test_same_seed_same_bits_other_seed_other_model() -> None:
    prompt = tuple(range(3, 40))
    first = generate(Decoder(ModelConfig(seed=3)), prompt, 5)
    again = generate(Decoder(ModelConfig(seed=3)), prompt, 5)
    other = generate(Decoder(ModelConfig(seed=4)), prompt, 5)
    assert first.logits.tobytes() == again.logits.tobytes()
    assert first.outputs == again.outputs
    assert not np.array_equal(first.logits, other.logits)


def test_generate_feeds_back_all_outputs_but_the_last() -> None:
    run = generate(Decoder(ModelConfig()), (1, 2, 3), 4)
    assert run.logits.shape == (3 + 4 - 1, 64)
    assert run.outputs == tuple(int(np.argmax(row)) for row in run.logits[2:])
    assert len(set(run.outputs)) > 1 or len(set(map(tuple, run.logits[2:]))) > 1


def test_sliding_window_layer_sees_exactly_the_last_w_tokens_and_itself() -> None:
    """Token p of a lone SWA layer depends on positions [p - W, p] and nothing older: the
    window a cache with ``sliding_window=W`` keeps for a prefix of length p."""
    window, prompt = 4, list(range(10, 30))
    position = len(prompt) - 1
    base = _logits(("swa",), prompt, window)[position]
    outside = _changed(prompt, position - window - 1)
    assert _logits(("swa",), outside, window)[position].tobytes() == base.tobytes()
    edge = _changed(prompt, position - window)
    assert not np.array_equal(_logits(("swa",), edge, window)[position], base)


@pytest.mark.parametrize("position", [16, 17, 23])
def test_chunked_layer_sees_exactly_its_own_chunk_so_far(position: int) -> None:
    """Token p of a lone chunked layer (chunks of C = 8) depends on positions
    [p - p % C, p] and nothing earlier or later: the first token of a chunk sees only
    itself, what a cache with ``ChunkedLocal(chunk=C)`` keeps for a prefix of length p."""
    prompt = list(range(10, 40))
    base = _logits(("chunked",), prompt)
    before = _logits(("chunked",), _changed(prompt, 15))
    assert before[position].tobytes() == base[position].tobytes()
    assert not np.array_equal(before[15], base[15])
    start = _logits(("chunked",), _changed(prompt, 16))
    assert not np.array_equal(start[position], base[position])
    later = _logits(("chunked",), _changed(prompt, position + 1))
    assert later[position].tobytes() == base[position].tobytes()


@pytest.mark.parametrize("layers", [("full",), ("ssm",), ("ssm", "chunked")])
def test_full_attention_and_the_recurrence_see_the_first_token(layers: tuple[str, ...]) -> None:
    prompt = list(range(10, 50))
    changed = [11, *prompt[1:]]
    assert not np.array_equal(_logits(layers, prompt)[-1], _logits(layers, changed)[-1])


def test_positions_beyond_the_table_are_refused() -> None:
    decoder = Decoder(ModelConfig(max_positions=8))
    with pytest.raises(ValueError, match="position"):
        generate(decoder, tuple(range(8)), 2)
