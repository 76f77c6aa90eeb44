"""Smoke test of ``radixkv bench events`` (timings are never asserted, only the run's shape:
every setting, pass and page size, ratios against events off)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from radixkv.bench.events_bench import _cache, _step, summarize
from radixkv.bench.events_live import summarize_publisher
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
    live = document["publisher"]
    assert "publish (live: the publisher's thread running)" in text
    assert [(row["page_size"], row["setting"]) for row in live["summary"]] == [
        (page, setting) for page in (1, 16) for setting in ("off", "queued", "live")]
    for row in live["summary"]:
        assert row["p50_us"] > 0 and row["mean_us"] > 0 and len(row["mean_ratios"]) == 2
    published = [r for r in live["results"] if r["setting"] == "live"]
    assert len(published) == 2 * 2 and len(live["results"]) == 2 * 2 * 3
    for record in published:  # every step's batch was sent, and reached the subscriber
        assert record["batches"] == 60 - 6 and record["received"] == record["batches"]
        assert record["flushed"] and record["dropped_events"] == 0


def test_bench_events_can_leave_the_live_publisher_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "events.json"
    assert main(["bench", "events", "--prompts", "40", "--rounds", "1", "--page-size", "16",
                 "--page-hash", "sha256", "--no-publisher", "--json", str(out)]) == 0
    assert "publisher" not in json.loads(out.read_text())
    assert "live" not in capsys.readouterr().out


def test_publisher_summary_takes_each_rounds_ratios_then_the_median() -> None:
    figures = {"off": [(10.0, 20.0), (20.0, 40.0), (10.0, 10.0)],
               "live": [(12.0, 30.0), (30.0, 40.0), (11.0, 30.0)]}
    records = [{"round": r, "page_size": 16, "setting": setting, "p50_us": p50, "mean_us": mean}
               for setting, rows in figures.items() for r, (p50, mean) in enumerate(rows)]
    rows = {row["setting"]: row for row in summarize_publisher(records)}
    assert rows["live"]["p50_ratios"] == [1.2, 1.5, 1.1]
    assert rows["live"]["mean_ratios"] == [1.5, 1.0, 3.0]
    assert rows["live"]["p50_ratio"] == pytest.approx(1.2)
    assert rows["live"]["mean_ratio"] == pytest.approx(1.5)
    assert rows["off"]["mean_ratios"] == [1.0, 1.0, 1.0] and rows["live"]["mean_us"] == 30.0


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
