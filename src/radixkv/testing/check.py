"""``check_component``: the one call of the conformance kit."""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from hypothesis import HealthCheck, settings
from hypothesis import seed as fixed_seed
from hypothesis.stateful import run_state_machine_as_test

from ..components import ComponentSpec, FullAttention, Mamba, SlidingWindow, component_type
from ..components.dependencies import check_order
from ..errors import ConfigError
from .audit import Audited
from .flags import flags_test
from .machine import Plan


class ComponentCheckError(AssertionError):
    """A component failed the conformance kit. The message names the spec, the other
    components and the page size, the first error, and hypothesis's minimal failing
    example (the steps to replay); ``__cause__`` is the original exception."""


def check_component(
    spec: ComponentSpec,
    *,
    page_sizes: Sequence[int] = (1, 4),
    with_components: Sequence[Sequence[ComponentSpec]] | None = None,
    max_examples: int = 25,
    steps: int = 30,
    seed: int = 0,
    shrink_seconds: int = 60,
) -> None:
    """Check that the component of ``spec`` (a registered spec) behaves as it declares, in
    caches of it and other components, at each page size.

    For each page size and each entry of ``with_components`` (the other specs of one
    cache; the default adds :class:`FullAttention` when ``spec`` is not primary, and runs
    alone, and with a sliding window / Mamba where the declarations allow) it runs:

    1. a hypothesis state machine of a small :class:`~radixkv.PrefixCache` (eviction and
       ``OutOfSlotsError`` are frequent; two namespaces; a random eviction policy) driven
       through admit / extend / commit / checkpoint / slide_window / finish / abort,
       allocate / insert / release, match, lock / unlock, evict by component name and
       reset, compared after every call with a reference model built from the declared
       rules (:mod:`radixkv.testing.reference`: a per-token component accepts a prefix of
       ``L`` iff ``[window_start(L), L)`` is live, a state component iff a state sits at
       ``L``; an insert is cut at the state's last checkpoint and where the whole new
       tail left a window), with ``check_invariants()``, the declared lock order, slot
       ownership (no slot owned twice, none leaked), the ledgers, locked values and
       prefixes, and useless leaves audited after every step;
    2. a check that the flags ``pins_whole_path``, ``pins_end_node``, ``per_token``,
       ``whole_when_complete`` and ``leaf_candidates`` agree with the hooks they replace,
       on every node of random trees.

    Deterministic for a given ``seed`` and set of imported modules (no example database;
    hypothesis also draws literal constants found in loaded modules); ``max_examples`` and
    ``steps`` bound each run, ``shrink_seconds`` the search for the minimal example after
    a failure (hypothesis's own limit is 300 s; this one is set through a hypothesis
    internal for the duration of the call, and left alone where a hypothesis version lacks
    it). Cost: seconds per machine at the defaults. Changes nothing else outside the caches
    it builds. Raises :class:`ComponentCheckError` (an :class:`AssertionError`) on the
    first failure, with hypothesis's minimal example; :class:`~radixkv.errors.ConfigError`
    before running anything when a combination can form no cache at a page size (e.g. a
    spec not registered, or a chunk the page size does not divide) or holds more than one
    state component.
    """
    plans = _plans(spec, page_sizes, with_components)
    options = settings(max_examples=max_examples, stateful_step_count=steps, deadline=None,
                       database=None, suppress_health_check=list(HealthCheck),
                       report_multiple_bugs=False)
    with _shrink_limit(shrink_seconds):
        for plan in plans:
            machine = seed_machine(plan, seed)
            _run(plan, "state machine", lambda m=machine: run_state_machine_as_test(
                m, settings=options))
            test = flags_test(plan, settings(options, max_examples=max(1, max_examples // 2)))
            _run(plan, "flags", fixed_seed(seed)(test))


@contextmanager
def _shrink_limit(seconds: int) -> Iterator[None]:
    """Hypothesis's shrinking time limit set to ``seconds`` while the kit runs."""
    engine = importlib.import_module("hypothesis.internal.conjecture.engine")
    before = getattr(engine, "MAX_SHRINKING_SECONDS", None)
    if before is None:
        yield
        return
    setattr(engine, "MAX_SHRINKING_SECONDS", seconds)  # noqa: B010
    try:
        yield
    finally:
        setattr(engine, "MAX_SHRINKING_SECONDS", before)  # noqa: B010


def seed_machine(plan: Plan, value: int) -> type[Audited]:
    """The kit's machine class for ``plan``, seeded."""
    name = "".join(s.name.capitalize() for s in plan.specs) + f"Page{plan.page}"
    machine = type(f"{name}Machine", (Audited,), {"PLAN": plan})
    seeded: type[Audited] = fixed_seed(value)(machine)
    return seeded


def _run(plan: Plan, what: str, test: object) -> None:
    try:
        test()  # type: ignore[operator]
    except Exception as error:
        notes = "\n".join(getattr(error, "__notes__", ()))
        names = "+".join(s.name for s in plan.specs)
        raise ComponentCheckError(
            f"{what} of {names} at page size {plan.page}: {type(error).__name__}: {error}\n"
            f"{notes}") from error


def _plans(spec: ComponentSpec, page_sizes: Sequence[int],
           with_components: Sequence[Sequence[ComponentSpec]] | None) -> list[Plan]:
    companions = _default_companions(spec) if with_components is None else with_components
    plans = []
    for others in companions:
        specs = _ordered(spec, tuple(others))
        for page in page_sizes:
            plan = Plan(specs, page)
            plan.config(full_pages=6)  # raises ConfigError for what cannot form a cache
            plans.append(plan)
    return plans


def _default_companions(spec: ComponentSpec) -> list[tuple[ComponentSpec, ...]]:
    window, state = SlidingWindow(window=3), Mamba(track_interval=4, states=6)
    if spec.primary:
        return [(), (window,), (window, state)]
    if spec.windowed:
        return [(), (state,)] if isinstance(spec, SlidingWindow) else [(), (window, state)]
    return [(), (window,)]


def _ordered(spec: ComponentSpec, others: tuple[ComponentSpec, ...]) -> tuple[ComponentSpec, ...]:
    """``spec`` and ``others`` (plus FULL when none is primary) in an order that forms a
    cache; :class:`ConfigError` when there is none or more than one state component."""
    every = (spec, *others)
    if not any(s.primary for s in every):
        every = (FullAttention(), *every)
    if sum(1 for s in every if not _per_token(s)) > 1:
        raise ConfigError("the kit runs caches with at most one state component")
    for order in itertools.permutations(every):
        if check_order(order) is None:
            return tuple(order)
    raise ConfigError(f"{'+'.join(s.name for s in every)} cannot form a cache: "
                      f"{check_order(every)}")


def _per_token(spec: ComponentSpec) -> bool:
    return component_type(spec).per_token
