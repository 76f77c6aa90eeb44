"""Printing for ``radixkv verify``: a progress bar and the verdict tables."""

from __future__ import annotations

from .harness import GroupVerdict, Mismatch, VerifyReport


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _mismatch_line(mismatch: Mismatch) -> str:
    outputs = "; greedy outputs differ" if mismatch.outputs else ""
    return (f"      request {mismatch.rid}: {mismatch.rows} logits rows differ, first at "
            f"position {mismatch.position}, max |diff| {mismatch.max_diff:.3g}{outputs}")


def group_lines(groups: list[GroupVerdict], details: bool = True) -> list[str]:
    """One line per group (``PASS``/``FAIL``), each failure followed by its requests."""
    lines = [f"  {'group':<12} {'requests':>8} {'prompt':>7} {'reused':>12} {'rows':>6}  verdict"]
    for group in groups:
        reused = f"{group.reused} ({_share(group.reused, group.prompt_tokens)})"
        verdict = "PASS" if group.passed else "FAIL"
        lines.append(f"  {group.group:<12} {group.requests:>8} {group.prompt_tokens:>7} "
                     f"{reused:>12} {group.compared_rows:>6}  {verdict}")
        if details:
            lines.extend(_mismatch_line(mismatch) for mismatch in group.mismatches)
    return lines


def _per_component(counts: dict[str, int], units: dict[str, str]) -> str:
    return " · ".join(f"{name} {count} {units[name]}" for name, count in counts.items())


def summary_lines(report: VerifyReport) -> list[str]:
    """Reuse and evictions per component, engine counters and the overall verdict."""
    engine = report.engine
    rows = sum(group.compared_rows for group in report.groups)
    requests = sum(group.requests for group in report.groups)
    failed = [group.group for group in report.groups if not group.passed]
    units = report.units
    lines = [
        f"  reused:  {_per_component(report.reused, units)} "
        f"({_share(report.reused_tokens, report.prompt_tokens)} of prompt tokens)",
        f"  evicted: {_per_component(report.evicted, units)} "
        f"(own pool short: {_per_component(report.pressure, units)})",
        f"  engine:  {engine.admitted} admissions, peak {engine.peak_running} running, "
        f"{engine.preemptions} preempted, {engine.computed_tokens} tokens computed",
    ]
    if report.host is not None:
        lines.extend(host_lines(report))
    if report.storage is not None:
        lines.append(storage_line(report))
    if report.tombstones:
        peaks = " · ".join(f"{name} {count} nodes" for name, count in report.tombstones.items())
        lines.append(f"  tombstones (most at once): {peaks}")
    if engine.window_misses:
        lines.append(f"  warning: {engine.window_misses} token steps needed window KV the "
                     "cache did not lend (window or chunk smaller than the model's?)")
    if failed:
        lines.append(f"  FAIL: {len(failed)} of {len(report.groups)} groups differ from the "
                     f"uncached run: {', '.join(failed)}")
    else:
        lines.append(f"  PASS: {requests} requests, {rows} logits rows bitwise equal to the "
                     "uncached run")
    return lines


def host_lines(report: VerifyReport) -> list[str]:
    """Where the reused tokens came from and what the host tier copied, for a run with a
    host tier. A token "from host memory" is one of a prefix only host values made usable
    (``host_hit_tokens``: its FULL KV, or only the window KV or state at its end, was copied
    back); the others the device served alone. Admissions of preempted or failed requests
    count too."""
    host = report.host
    assert host is not None
    hits, loaded = report.hit_tokens, host.host_hit_tokens
    units = report.units
    backed = {name: part.backed_up for name, part in host.components.items()}
    back = {name: part.loaded for name, part in host.components.items()}
    engine = report.engine
    return [
        f"  reused from: device alone {hits - loaded} tokens ({_share(hits - loaded, hits)}) · "
        f"host memory {loaded} tokens ({_share(loaded, hits)}), in {host.load_requests} "
        "load-backs",
        f"  host tier: backed up {_per_component(backed, units)} · loaded back "
        f"{_per_component(back, units)}",
        f"  copies:  {host.backup_batches} backup + {host.load_batches} load-back batches, "
        f"{host.failed_backups + host.failed_loads} failed, {engine.failed_loads} requests "
        f"readmitted, {engine.load_waits} steps waited",
    ]


def storage_line(report: VerifyReport) -> str:
    """What the storage tier (L3) restored and wrote, for a run with one."""
    storage = report.storage
    assert storage is not None
    return (f"  storage tier: restored {storage.restored_tokens} prompt tokens "
            f"({report.storage_share:.0%}) in {storage.restores} restores of "
            f"{storage.prefetches} prefetches · wrote {storage.written_pages} pages, "
            f"{storage.faults} faults")
