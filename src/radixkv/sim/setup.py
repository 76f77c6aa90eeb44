"""From command-line style choices to simulator configurations: capacities like ``1M`` or
``inf``, a cache of given components, an engine with a cost-model preset."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import CacheConfig
from ..host import HostTier
from .cluster import SimConfig
from .costs import PRESETS, CostModel
from .engine import EngineConfig
from .requests import SimRequest
from .sizes import UNITS, parse_capacity

__all__ = ["UNITS", "Shape", "parse_capacity", "unbounded_capacity"]

def unbounded_capacity(requests: list[SimRequest]) -> int:
    """Enough FULL slots to never evict: every token of every request."""
    return sum(len(r.prompt) + len(r.output) for r in requests) + 1


@dataclass(frozen=True)
class Shape:
    """One simulated setup, capacity aside."""

    components: tuple[str, ...] = ("full",)
    page_size: int = 16
    policy: str = "lru"
    window: int = 4096
    track_interval: int = 512
    mamba_states: int = 4096
    preset: str = "8b-h100"
    hints: bool = True
    max_batch_tokens: int = 8192
    max_running: int = 256
    engines: int = 1
    router: str = "round-robin"
    host_capacity: int | None = None
    """Host-tier slots (tokens; MAMBA gets ``mamba_states`` host states); ``None``: none."""
    write_policy: str = "write_through"

    def cost(self) -> CostModel:
        window = self.window if "swa" in self.components else None
        preset = PRESETS.get(self.preset)
        if preset is None:
            raise ValueError(f"unknown preset {self.preset!r}; choose from "
                             f"{', '.join(PRESETS)}")
        return preset.with_layers(self.components, window)

    def config(self, capacity: int | None, requests: list[SimRequest]) -> SimConfig:
        """The simulator configuration at ``capacity`` FULL tokens (``None``: unbounded)."""
        tokens = unbounded_capacity(requests) if capacity is None else capacity
        tokens = -(-tokens // self.page_size) * self.page_size
        cache = CacheConfig(capacity=tokens, page_size=self.page_size, policy=self.policy,
                            components=self.components, host=self._host(),
                            **self._hybrid())  # type: ignore[arg-type]
        engine = EngineConfig(cache, self.cost(), max_batch_tokens=self.max_batch_tokens,
                              max_running=self.max_running, hints=self.hints,
                              events=len(self.components) > 1)
        return SimConfig(engine, self.engines, self.router)

    def _host(self) -> HostTier | None:
        if self.host_capacity is None:
            return None
        slots = -(-self.host_capacity // self.page_size) * self.page_size
        states = self.mamba_states if "mamba" in self.components else 0
        return HostTier(capacity=slots, states=states, write_policy=self.write_policy)

    def _hybrid(self) -> dict[str, object]:
        extra: dict[str, object] = {}
        if "swa" in self.components:
            extra["sliding_window"] = self.window
        if "mamba" in self.components:
            interval = -(-self.track_interval // self.page_size) * self.page_size
            extra.update(mamba_track_interval=interval, mamba_states=self.mamba_states)
        return extra

    def with_(self, **changes: object) -> Shape:
        return replace(self, **changes)  # type: ignore[arg-type]
