"""The rule for objects that bind their parts' methods under their own names."""

from __future__ import annotations


def refuse_hiding(cls: type, verbs: tuple[str, ...], what: str) -> None:
    """Raise :class:`TypeError` when ``cls`` (a subclass being created) defines one of
    ``verbs``: an instance of ``what`` binds its parts' methods under those names at
    construction, and that binding would hide the subclass's method, which would then never
    run (change the part instead). O(verbs)."""
    hidden = [name for name in verbs if name in vars(cls)]
    if hidden:
        raise TypeError(f"{cls.__name__} defines {', '.join(hidden)}: a {what} binds its "
                        "parts' methods under these names, so it would never be called")
