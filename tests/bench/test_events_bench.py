"""Smoke test of ``radixkv bench events`` (timings are never asserted, only the run's shape:
every setting, pass and page size, ratios against events off)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from radixkv.bench.events_bench import _cache, _step, summarize
from radixkv.cache import PrefixCache
from radixkv.cli import main
from radixkv.core.events import KVEvent, is_pending


def test_bench_events_reports_every_setting_pass_and_page_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "events.json"
    code = main(["bench", "events", "--prompts", "60", "--rounds", "2", "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "events on ÷ events off" in text
    document = json.loads(out.read_text())
    keys = {(r["page_size"], r["pass"], r["setting"]) for r in document["summary"]}
    assert keys == {(page, name, setting) for page in (1, 16) for name in ("new", "cached")
                    for setting in ("off", "sha256", "xxh3_128")}
    assert len(document["results"]) == 2 * 2 * 3 * 2
    for row in document["summary"]:
        assert row["p50_us"] > 0 and len(row["ratios"]) == 2
        if row["setting"] == "off":
            assert row["ratios"] == [1.0, 1.0]


def test_events_summary_takes_each_rounds_ratio_then_the_median() -> None:
    records = [{"round": r, "page_size": 1, "pass": "new", "setting": s, "p50_us": v}
               for r, (off, on) in enumerate([(10.0, 12.0), (20.0, 30.0), (10.0, 11.0)])
               for s, v in (("off", off), ("sha256", on))]
    rows = {row["setting"]: row for row in summarize(records)}
    assert rows["sha256"]["ratios"] == [1.2, 1.5, 1.1]
    assert rows["sha256"]["ratio"] == pytest.approx(1.2)
    assert rows["sha256"]["p50_us"] == 12.0 and rows["off"]["p50_us"] == 10.0


def test_bench_events_can_read_every_event_in_the_timed_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "events.json"
    code = main(["bench", "events", "--prompts", "60", "--rounds", "1", "--page-size", "16",
                 "--page-hash", "sha256", "--read-fields", "--json", str(out)])
    assert code == 0
    assert "+ a read of each event" in capsys.readouterr().out
    document = json.loads(out.read_text())
    assert document["options"]["read_fields"] is True
    assert {row["setting"] for row in document["summary"]} == {"off", "sha256"}


class RecordingCache:
    """A cache's admit, finish and take_events, keeping what each take returned."""

    def __init__(self, cache: PrefixCache) -> None:
        self.admit, self.finish, self._take = cache.admit, cache.finish, cache.take_events
        self.taken: list[list[KVEvent]] = []

    def take_events(self) -> list[KVEvent]:
        self.taken.append(self._take())
        return self.taken[-1]


@pytest.mark.parametrize("read", [False, True])
def test_only_the_read_step_computes_the_pending_events_it_takes(read: bool) -> None:
    recording = RecordingCache(_cache("sha256", 16, 4096))
    _step(recording, read)(list(range(1, 40)))  # type: ignore[arg-type]
    [events] = recording.taken
    assert len(events) == 1 and is_pending(events[0]) is not read
