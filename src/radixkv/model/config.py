"""ModelConfig: the shape of the tiny reference decoder."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

LAYER_KINDS = ("full", "swa", "ssm")
"""Full causal attention, sliding-window attention, diagonal linear state-space layer."""

DEFAULT_LAYERS = {
    ("full",): ("full", "full"),
    ("full", "swa"): ("swa", "full", "swa"),
    ("full", "mamba"): ("ssm", "full", "ssm"),
    ("full", "swa", "mamba"): ("ssm", "swa", "full"),
}
"""A layer stack exercising each cache component combination."""


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the reference decoder.

    ``layers``: kinds from :data:`LAYER_KINDS`, bottom to top. ``window``: the sliding
    window W of ``"swa"`` layers: token ``p`` attends to positions ``[p - W, p]`` (the W
    tokens before it and itself), exactly what a cache with ``sliding_window=W`` promises
    to keep for a prefix of length ``p``. ``state_size``: channels of the recurrent state
    of ``"ssm"`` layers. ``max_positions``: size of the learned position table.
    Raises :class:`ConfigError` on invalid values.
    """

    layers: tuple[str, ...] = ("ssm", "swa", "full")
    vocab_size: int = 64
    d_model: int = 16
    heads: int = 2
    window: int = 8
    state_size: int = 8
    max_positions: int = 4096
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.layers:
            raise ConfigError("the model needs at least one layer")
        for kind in self.layers:
            if kind not in LAYER_KINDS:
                raise ConfigError(f"unknown layer kind {kind!r}; known: {', '.join(LAYER_KINDS)}")
        for name in ("vocab_size", "d_model", "heads", "window", "state_size", "max_positions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {value!r}")
        if self.d_model % self.heads:
            raise ConfigError(f"d_model {self.d_model} is not a multiple of heads {self.heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    def count(self, kind: str) -> int:
        """How many layers of ``kind`` the stack has."""
        return sum(layer == kind for layer in self.layers)

    def components(self) -> tuple[str, ...]:
        """The cache components this model needs: SWA for ``"swa"`` layers (FULL slots
        would also do, with no window savings), MAMBA for ``"ssm"`` layers."""
        needed = ["full"]
        if "swa" in self.layers:
            needed.append("swa")
        if "ssm" in self.layers:
            needed.append("mamba")
        return tuple(needed)

    @classmethod
    def for_components(cls, components: tuple[str, ...], **overrides: int) -> ModelConfig:
        """The default layer stack for a cache component combination."""
        if components not in DEFAULT_LAYERS:
            raise ConfigError(f"unsupported component combination {components!r}")
        return cls(layers=DEFAULT_LAYERS[components], **overrides)
