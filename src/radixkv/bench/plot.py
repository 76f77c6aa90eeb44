"""``radixkv bench plot``: a picture of a ``bench ops --json`` result (needs matplotlib,
the ``plot`` extra): median ops/s of each tree per operation, one panel per cache shape."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TREES = ("radixkv", "sglang-rust", "sglang-python")
OPS = ("insert", "match_prefix", "evict", "lock_unlock", "release", "admit_finish")


def _shape(r: dict[str, Any]) -> tuple[str, str, int]:
    return r.get("workload", "reference"), r["components"], r["page_size"]


def draw(result: dict[str, Any], out: Path) -> None:
    """Write a PNG of grouped bars (log scale), with the radixkv/rust ratio over each group;
    one panel per (workload, components, page size)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["summary"]
    shapes = sorted({_shape(r) for r in rows})
    ratios = {(*_shape(r), r["op"]): r.get("vs_rust") for r in result.get("ratios", [])}
    fig, axes = plt.subplots(len(shapes), 1, figsize=(9, 2.8 * len(shapes)), squeeze=False)
    trees = trees_in(rows)
    for ax, shape in zip(axes[:, 0], shapes):
        _panel(ax, [r for r in rows if _shape(r) == shape], ratios, shape, trees)
    axes[0, 0].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def trees_in(rows: list[dict[str, Any]]) -> list[str]:
    """The trees a result has rows of, in :data:`TREES` order (the legend's entries: a run
    of SGLang's Rust core alone has no Python-core bars)."""
    present = {r["tree"] for r in rows}
    return [tree for tree in TREES if tree in present]


def _panel(ax: Any, rows: list[dict[str, Any]], ratios: dict[tuple[str, str, int, str], Any],
           shape: tuple[str, str, int], trees: list[str]) -> None:
    width = 0.8 / max(len(trees), 1)
    ops = [op for op in OPS if any(r["op"] == op for r in rows)]
    for offset, tree in enumerate(trees):
        values = [next((r["ops_per_s"] for r in rows if (r["tree"], r["op"]) == (tree, op)),
                       0.0) for op in ops]
        shift = (offset - (len(trees) - 1) / 2) * width
        ax.bar([i + shift for i in range(len(ops))], values, width, label=tree)
    for i, op in enumerate(ops):
        ratio = ratios.get((*shape, op))
        if ratio:
            ax.annotate(f"{ratio:.2f}x", (i, 1.0), xycoords=("data", "axes fraction"),
                        ha="center", va="bottom", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(ops)), ops)
    ax.set_ylabel("ops/s (median)")
    workload, components, page = shape
    title = components if workload == "reference" else f"{workload}: {components}"
    ax.set_title(f"{title}, page {page} (label: radixkv / SGLang rust)", fontsize=9, pad=14)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="radixkv-bench-plot", description=__doc__)
    parser.add_argument("result", type=Path, help="JSON written by `radixkv bench ops --json`")
    parser.add_argument("png", type=Path, help="the picture to write")
    args = parser.parse_args(argv)
    draw(json.loads(args.result.read_text()), args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
