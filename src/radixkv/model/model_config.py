"""ModelConfig: the shape of the tiny reference decoder, and which cache components its
layer kinds need."""

from __future__ import annotations

from dataclasses import dataclass

from ..components.dependencies import supported_combinations
from ..errors import ConfigError

LAYER_KINDS = ("full", "swa", "chunked", "ssm")
"""Full causal attention, sliding-window attention, chunked local attention, diagonal linear
state-space layer."""

ATTENTION_KINDS = ("full", "swa", "chunked")
"""The layer kinds that read and write KV, one slot per token."""

LAYER_COMPONENTS = {"full": "full", "swa": "swa", "chunked": "chunked", "ssm": "mamba"}
"""The cache component that holds each layer kind's KV or state."""

_COMPONENT_LAYERS = {component: kind for kind, component in LAYER_COMPONENTS.items()}


def combinations() -> list[tuple[str, ...]]:
    """The cache component combinations the reference model can drive: those of
    :func:`radixkv.supported_combinations` made only of components a layer kind uses."""
    return [combo for combo in supported_combinations()
            if all(name in _COMPONENT_LAYERS for name in combo)]


def default_layers(combo: tuple[str, ...]) -> tuple[str, ...]:
    """A small layer stack exercising every component of ``combo``: the SSM layer (if any)
    at the bottom, then the other kinds, then full attention; a lone kind also sits above
    the full layer, and FULL alone gets two full layers. Raises :class:`ConfigError` for a
    component no layer kind uses."""
    unknown = [name for name in combo if name not in _COMPONENT_LAYERS]
    if unknown or "full" not in combo:
        raise ConfigError(f"unsupported component combination {combo!r}")
    others = sorted((_COMPONENT_LAYERS[name] for name in combo if name != "full"),
                    key=lambda kind: kind != "ssm")  # stable: keeps the combination's order
    if not others:
        return ("full", "full")
    if len(others) == 1:
        return (others[0], "full", others[0])
    return (*others, "full")


DEFAULT_LAYERS = {combo: default_layers(combo) for combo in combinations()}
"""A layer stack exercising each component combination, derived from the supported ones."""


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the reference decoder.

    ``layers``: kinds from :data:`LAYER_KINDS`, bottom to top. ``window``: the sliding
    window W of ``"swa"`` layers: token ``p`` attends to positions ``[p - W, p]`` (the W
    tokens before it and itself), exactly what a cache with ``sliding_window=W`` promises
    to keep for a prefix of length ``p``. ``chunk``: the chunk C of ``"chunked"`` layers:
    token ``p`` attends to ``[p - p % C, p]`` (the earlier tokens of its own chunk and
    itself), what a cache with ``ChunkedLocal(chunk=C)`` keeps for a prefix of length
    ``p``. ``state_size``: channels of the recurrent state of ``"ssm"`` layers.
    ``max_positions``: size of the learned position table. Raises :class:`ConfigError` on
    invalid values.
    """

    layers: tuple[str, ...] = ("ssm", "swa", "full")
    vocab_size: int = 64
    d_model: int = 16
    heads: int = 2
    window: int = 8
    chunk: int = 16
    state_size: int = 8
    max_positions: int = 4096
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.layers:
            raise ConfigError("the model needs at least one layer")
        for kind in self.layers:
            if kind not in LAYER_KINDS:
                raise ConfigError(f"unknown layer kind {kind!r}; known: {', '.join(LAYER_KINDS)}")
        for name in ("vocab_size", "d_model", "heads", "window", "chunk", "state_size",
                     "max_positions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {value!r}")
        if self.d_model % self.heads:
            raise ConfigError(f"d_model {self.d_model} is not a multiple of heads {self.heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def attention_kinds(self) -> tuple[str, ...]:
        """The attention layer kinds of the stack, each once, in :data:`ATTENTION_KINDS`
        order."""
        return tuple(kind for kind in ATTENTION_KINDS if kind in self.layers)

    def count(self, kind: str) -> int:
        """How many layers of ``kind`` the stack has."""
        return sum(layer == kind for layer in self.layers)

    def span_start(self, kind: str, position: int) -> int:
        """First position an attention layer of ``kind`` reads for the token at
        ``position`` (it reads every position from there to ``position``)."""
        if kind == "swa":
            return max(0, position - self.window)
        if kind == "chunked":
            return position - position % self.chunk
        return 0

    def components(self) -> tuple[str, ...]:
        """The cache components this model needs, in the order a cache lists them: FULL,
        and the component of each other layer kind (SWA and chunked layers could also read
        FULL slots, without the window's savings)."""
        needed = {"full"} | {LAYER_COMPONENTS[kind] for kind in self.layers}
        found = next((combo for combo in combinations() if set(combo) == needed), None)
        if found is None:
            raise ConfigError(f"no supported cache combination holds {sorted(needed)}")
        return found

    @classmethod
    def for_components(cls, components: tuple[str, ...], **overrides: int) -> ModelConfig:
        """The default layer stack (:func:`default_layers`) for a component combination."""
        if components not in DEFAULT_LAYERS:
            raise ConfigError(f"unsupported component combination {components!r}")
        return cls(layers=DEFAULT_LAYERS[components], **overrides)
