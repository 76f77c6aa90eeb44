"""check_workload: one request per id, parents first, for the model's and the sim's requests."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv.driver import check_workload
from radixkv.model import RequestSpec
from radixkv.sim import SimRequest


def sim(rid: int, parent: int | None = None) -> SimRequest:
    return SimRequest(rid, 0.0, np.array([1, 2]), np.array([3]), parent=parent)


def test_parents_first_and_distinct_ids_pass_for_either_kind_of_request() -> None:
    check_workload([sim(0), sim(1, parent=0), sim(2, parent=0)])
    check_workload([RequestSpec(0, "a", (1,), 1), RequestSpec(5, "a", (2,), 1, parent=0)])


def test_a_parent_that_comes_later_is_refused() -> None:
    with pytest.raises(ValueError, match="request 0: parent 1 does not come before it"):
        check_workload([sim(0, parent=1), sim(1)])
    with pytest.raises(ValueError, match="parent 7"):
        check_workload([RequestSpec(0, "a", (1,), 1, parent=7)])


def test_a_repeated_id_is_refused() -> None:
    with pytest.raises(ValueError, match="duplicate request id 3"):
        check_workload([sim(3), sim(3)])
