"""PartVerb: a public verb of a PrefixCache that is one of its parts' methods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")


class PartVerb(Generic[P, R]):
    """The class attribute of a verb a cache binds at construction to its part's method.

    The cache's instance binding (an entry of its ``__dict__``) hides this non-data
    descriptor, so a call costs what a method of the cache's own would (bench opcodes); the
    descriptor is what the class shows: read on the class, it is the part's function (its
    signature and its contract, stated once there: ``help``, ``inspect``, the README's API
    table test); read on an instance not bound yet (during construction), the part's bound
    method."""

    def __init__(self, part: str, function: Callable[Concatenate[Any, P], R]) -> None:
        self.part = part
        """The name of the cache's attribute that holds the part."""
        self.function = function
        self.name = function.__name__
        self.__doc__ = function.__doc__

    @overload
    def __get__(self, cache: None, owner: type) -> Callable[Concatenate[Any, P], R]: ...

    @overload
    def __get__(self, cache: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(self, cache: object, owner: type | None = None) -> Callable[..., R]:
        if cache is None:
            return self.function
        method: Callable[P, R] = getattr(getattr(cache, self.part), self.name)
        return method
