"""The progress bar of the long commands: counts, elapsed time, time left, redraw rate."""

from __future__ import annotations

import io

from radixkv.progress import ProgressBar, _duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bar_shows_counts_elapsed_time_and_time_left_at_the_pace_so_far() -> None:
    stream, clock = io.StringIO(), Clock()
    bar = ProgressBar(True, stream, width=4, clock=clock)
    bar.prefix = "run 1/2"
    bar.update(0, 8)
    clock.now += 30
    bar.update(2, 8)
    clock.now += 90
    bar.update(8, 8)
    bar.close()
    assert stream.getvalue().split("\r")[1:] == [
        "run 1/2 [....] 0/8 requests, 0 s",
        "run 1/2 [#...] 2/8 requests, 30 s, ~1 min 30 s left",
        # blanks the end of the longer line before it
        "run 1/2 [####] 8/8 requests, 2 min 00 s" + " " * 12 + "\n"]


def test_the_bar_redraws_at_most_ten_times_a_second_but_always_at_the_end() -> None:
    stream, clock = io.StringIO(), Clock()
    bar = ProgressBar(True, stream, width=2, clock=clock)
    bar.update(1, 4)
    clock.now += 0.05
    bar.update(2, 4)  # too soon: not drawn
    bar.update(4, 4)  # the end: drawn
    assert [line.split(" requests")[0] for line in stream.getvalue().split("\r")[1:]] == [
        "[..] 1/4", "[##] 4/4"]


def test_closing_ends_the_line_and_the_next_update_starts_a_new_clock() -> None:
    stream, clock = io.StringIO(), Clock()
    bar = ProgressBar(True, stream, width=2, clock=clock)
    bar.update(1, 1)
    bar.close()
    bar.close()  # nothing drawn since: no second newline
    clock.now += 500
    bar.update(1, 2)
    assert stream.getvalue() == "\r[##] 1/1 requests, 0 s\n\r[#.] 1/2 requests, 0 s, ~0 s left"


def test_a_disabled_bar_writes_nothing_and_by_default_only_a_terminal_is_drawn_on() -> None:
    stream = io.StringIO()
    for bar in (ProgressBar(False, stream), ProgressBar(stream=stream)):
        bar.update(1, 2)
        bar(2, 2)
        bar.close()
    assert stream.getvalue() == ""


def test_reaching_the_total_ends_the_line_and_calling_the_bar_updates_it() -> None:
    stream, clock = io.StringIO(), Clock()
    bar = ProgressBar(True, stream, width=2, unit="", prefix="  verify", clock=clock)
    bar(1, 2)
    clock.now += 4
    bar(2, 2)  # the end: drawn at once, and the line ended without close()
    first, last = "  verify [#.] 1/2, 0 s, ~0 s left", "  verify [##] 2/2, 4 s"
    assert stream.getvalue() == f"\r{first}\r{last.ljust(len(first))}\n"


def test_durations_read_in_seconds_minutes_and_hours() -> None:
    assert [_duration(s) for s in (0.2, 59.4, 59.6, 125, 3599, 3600, 7380)] == [
        "0 s", "59 s", "1 min 00 s", "2 min 05 s", "59 min 59 s", "1 h 00 min", "2 h 03 min"]
