"""radixkv.testing: the conformance kit for components (needs the ``testing`` extra).

``check_component(spec)`` runs a hypothesis state machine of a cache holding the component
against a reference model built from the component's declared rules, plus a check of its
fast-path flags; see :func:`check_component`.
"""

from .check import ComponentCheckError, check_component

__all__ = ["ComponentCheckError", "check_component"]
