"""SimRequest: ids and times converted once at construction, bad ones refused."""

from __future__ import annotations

import numpy as np
import pytest

from radixkv.sim.requests import SimRequest


def test_token_lists_and_other_int_dtypes_become_uint32_arrays_and_times_floats() -> None:
    request = SimRequest(0, np.int64(3), [1, 2, 3], np.array([7], dtype=np.int64),
                         delay=np.float32(0.5))
    assert request.prompt.dtype == np.uint32 and request.prompt.tolist() == [1, 2, 3]
    assert request.output.dtype == np.uint32 and request.output.tolist() == [7]
    assert type(request.arrival) is float and request.arrival == 3.0
    assert type(request.delay) is float and request.delay == 0.5


def test_a_uint32_array_is_kept_as_it_is() -> None:
    prompt = np.arange(4, dtype=np.uint32)
    assert SimRequest(0, 0.0, prompt, prompt[:1]).prompt is prompt


@pytest.mark.parametrize(("fields", "why"), [
    ({"prompt": []}, "prompt and output need at least one token"),
    ({"output": np.zeros(0, dtype=np.uint32)}, "prompt and output need at least one token"),
    ({"prompt": [1.5]}, "prompt must be token ids"),
    ({"prompt": [-1]}, "prompt must be token ids"),
    ({"output": [2**32]}, "output must be token ids"),
    ({"prompt": [[1], [2]]}, "prompt must be token ids"),
    ({"prompt": ["a"]}, "prompt must be token ids"),
    ({"arrival": float("nan")}, "arrival must be a finite number of seconds >= 0"),
    ({"arrival": -1.0}, "arrival must be a finite number of seconds >= 0"),
    ({"arrival": True}, "arrival must be a finite number of seconds >= 0"),
    ({"delay": float("inf")}, "delay must be a finite number of seconds >= 0"),
])
def test_bad_ids_and_times_are_refused(fields: dict[str, object], why: str) -> None:
    values: dict[str, object] = {"rid": 4, "arrival": 0.0, "prompt": [1], "output": [2],
                                 **fields}
    with pytest.raises(ValueError, match=f"request 4: {why}"):
        SimRequest(**values)  # type: ignore[arg-type]
