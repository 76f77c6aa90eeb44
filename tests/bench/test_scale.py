"""Smoke runs of ``radixkv bench scale``'s measurements at small sizes (no timing asserted)."""

from radixkv.bench.scale import branching_sequences, growth, heap_per_token


def test_growth_reaches_each_size_and_times_match_lock_and_insert() -> None:
    points = growth((200, 800), samples=20, rounds=2)
    assert [p.nodes >= size for p, size in zip(points, (200, 800))] == [True, True]
    assert all(p.match_us > 0 and p.insert_us > 0 and p.lock_us > 0 for p in points)


def test_branching_sequences_hold_the_asked_distinct_tokens() -> None:
    seqs = branching_sequences(5000)
    assert sum(len(s) for s in seqs) >= 5000
    assert all(s[:1] == seqs[0][:1] for s in seqs)  # every sequence branches off the first


def test_heap_per_token_counts_the_tree_and_every_cached_token() -> None:
    point = heap_per_token(page_size=4, tokens=20_000)
    assert point.tokens >= 20_000 - 4 * len(branching_sequences(20_000))
    assert point.nodes > 1
    assert 4 < point.bytes_per_token < 1000  # at least the packed key; a sanity bound


def test_bench_scale_command_prints_both_tables(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from radixkv.cli import main

    out = tmp_path / "scale.json"
    code = main(["bench", "scale", "--sizes", "100", "300", "--samples", "10", "--rounds", "2",
                 "--memory-tokens", "3000", "--page-size", "1", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "bytes/token" in printed and "match p50" in printed and "lock+unlock p50" in printed
    assert "cost per path node at" in printed
    assert '"growth"' in out.read_text()
