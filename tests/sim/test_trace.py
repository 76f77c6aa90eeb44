"""Trace files: Mooncake hash_ids and plain token lists (generated here, in tmp_path)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from radixkv.sim.trace import TraceConfig, load_trace


def write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_equal_hash_ids_expand_to_equal_token_blocks(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.jsonl", [
        {"timestamp": 0, "input_length": 1100, "output_length": 7, "hash_ids": [0, 1, 2]},
        {"timestamp": 1500, "input_length": 700, "output_length": 3, "hash_ids": [0, 3]},
    ])
    first, second = load_trace(trace)
    assert (len(first.prompt), len(second.prompt)) == (1100, 700)
    assert (len(first.output), len(second.output)) == (7, 3)
    assert second.arrival == 1.5
    assert np.array_equal(first.prompt[:512], second.prompt[:512])
    assert not np.array_equal(first.prompt[512:700], second.prompt[512:700])
    assert not first.cache_output


def test_a_block_id_gives_the_same_tokens_wherever_it_appears(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.jsonl", [
        {"timestamp": 0, "input_length": 8, "output_length": 1, "hash_ids": [5, 6]},
        {"timestamp": 0, "input_length": 8, "output_length": 1, "hash_ids": [6, 5]},
    ])
    first, second = load_trace(trace, TraceConfig(block=4))
    assert np.array_equal(first.prompt[:4], second.prompt[4:])


def test_token_lists_limit_and_time_scale(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.jsonl", [
        {"timestamp": 1000, "tokens": [1, 2, 3], "output_length": 2, "namespace": "a"},
        {"tokens": [4]},
        {"tokens": [5]},
    ])
    requests = load_trace(trace, TraceConfig(limit=2, time_scale=0.5))
    assert len(requests) == 2
    assert requests[0].prompt.tolist() == [1, 2, 3] and requests[0].arrival == 0.5
    assert requests[0].namespace == ("a", None) and requests[0].cache_output
    assert len(requests[1].output) == 1


@pytest.mark.parametrize(("record", "why"), [
    ({"input_length": 2000, "hash_ids": [1]}, "1 hash ids cannot cover 2000 tokens"),
    ({"hash_ids": [1]}, "missing field 'input_length'"),
    ({"input_length": 5.5, "hash_ids": [1]}, "input_length must be an int >= 0, got 5.5"),
    ({"input_length": 4, "hash_ids": [1.5]}, "hash_ids must be a list of ints"),
    ({"input_length": 4, "hash_ids": [-3]}, "hash_ids must be >= 0"),
    ({"tokens": []}, "non-empty"),
    ({"tokens": [-1]}, "tokens must be >= 0"),
    ({"tokens": [1.5, 2]}, "tokens must be a list of ints"),  # not truncated to 1
    ({"tokens": [True]}, "tokens must be a list of ints"),
    ({"tokens": [2**64 - 1]}, "below 2\\*\\*63"),
    ({"tokens": [[1, 2], [3]]}, "flat list"),
    ({"tokens": "abc"}, "got str"),
    ({"tokens": [1], "timestamp": -5}, "timestamp must be a finite number"),
    ({"tokens": [1], "timestamp": "soon"}, "timestamp must be a finite number"),
    ({"tokens": [1], "output_length": -1}, "output_length must be an int >= 0"),
    ({"timestamp": 0}, "needs hash_ids .with input_length. or tokens"),
    ([1, 2], "expected a JSON object, got list"),
])
def test_a_malformed_line_is_named_with_what_is_wrong(
        tmp_path: Path, record: object, why: str) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"tokens": [1]}) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(ValueError, match=r"t\.jsonl:2: bad trace record: .*" + why):
        load_trace(trace)


def test_a_line_that_is_not_json_and_a_file_with_no_request_are_refused(
        tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"tokens": [1]}\n{"timestamp": NaN, "tokens": [1]}\nnot json\n')
    with pytest.raises(ValueError, match=r"t\.jsonl:2: .*timestamp must be a finite"):
        load_trace(trace)  # NaN: Python's json reads it, a time cannot be it
    trace.write_text('{"tokens": [1]}\nnot json\n')
    with pytest.raises(ValueError, match=r"t\.jsonl:2: not JSON \(Expecting value\)"):
        load_trace(trace)
    trace.write_text("\n\n")
    with pytest.raises(ValueError, match="no requests in this trace"):
        load_trace(trace)
