"""A request inside one simulated engine.

Its cache calls are :class:`~radixkv.driver.RequestSteps`' (the reference model's engine
makes the same ones): every call goes through :class:`~radixkv.PrefixCache`'s public API, the
way a serving engine would make it.
"""

from __future__ import annotations

from .. import CacheConfig
from ..driver import RequestState
from .records import RequestRecord
from .requests import SimRequest


def component_names(config: CacheConfig) -> tuple[str, ...]:
    """The names of a cache's components, in tree order (entries may be names or specs)."""
    return tuple(c if isinstance(c, str) else str(c.name) for c in config.components)


class Job(RequestState):
    """A :class:`~radixkv.driver.RequestState` whose first answer token comes out of the
    prefill (``output_len - 1`` are fed, the last never is). ``sequence_keys``: the page
    keys, in its namespace, of all it may cache (the prompt and the fed answer); ``keys``:
    those of the prompt. ``seen`` and ``seen_any``: what earlier requests had of this prompt
    (this namespace / any), set on arrival. ``base`` and ``generation``: see
    :class:`~radixkv.sim.batch.DecodeBatch`. ``submission``: how many requests its engine
    took before it (preemption picks the newest). ``waiting_since``: when it last joined its
    engine's queue."""

    __slots__ = ("base", "generation", "keys", "output_len", "record", "request", "salt", "seen",
                 "seen_any", "sequence_keys", "submission", "waiting_since")

    def __init__(self, request: SimRequest, record: RequestRecord, sequence_keys: list[int],
                 page: int, salt: int) -> None:
        output_len = len(request.output)
        super().__init__(len(request.prompt), output_len - 1, request.cache_output)
        self.request, self.record, self.salt = request, record, salt
        self.sequence_keys = sequence_keys
        self.keys = sequence_keys[: self.prompt_len // page]
        self.seen = self.seen_any = 0
        self.base = self.generation = 0
        self.submission = 0
        self.waiting_since = 0.0
        self.output_len = output_len
