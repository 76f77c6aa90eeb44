"""radixkv.driver: the request life-cycle as a serving engine drives it through a
:class:`~radixkv.PrefixCache` (admit, prefill, decode, finish or abort), shared by the
reference model's engine (:mod:`radixkv.model`) and the simulator's (:mod:`radixkv.sim`).
The engines keep their own scheduling."""

from .steps import RequestState, RequestSteps, StateMemory
from .workload import Linked, check_workload

__all__ = ["Linked", "RequestState", "RequestSteps", "StateMemory", "check_workload"]
