"""``radixkv bench plot``: a picture of a ``bench ops --json`` result (needs matplotlib,
the ``plot`` extra): median ops/s of each tree per operation, one panel per cache shape."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TREES = ("radixkv", "sglang-rust", "sglang-python")
OPS = ("insert", "match_prefix", "evict", "lock_unlock", "release")


def draw(result: dict[str, Any], out: Path) -> None:
    """Write a PNG of grouped bars (log scale), with the radixkv/rust ratio over each group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["summary"]
    shapes = sorted({(r["components"], r["page_size"]) for r in rows})
    ratios = {(r["components"], r["page_size"], r["op"]): r.get("vs_rust")
              for r in result.get("ratios", [])}
    fig, axes = plt.subplots(len(shapes), 1, figsize=(9, 2.8 * len(shapes)), squeeze=False)
    for ax, (components, page) in zip(axes[:, 0], shapes):
        _panel(ax, rows, ratios, components, page)
    axes[0, 0].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def _panel(ax: Any, rows: list[dict[str, Any]], ratios: dict[tuple[str, int, str], Any],
           components: str, page: int) -> None:
    width = 0.27
    for offset, tree in enumerate(TREES):
        values = [next((r["ops_per_s"] for r in rows if (r["components"], r["page_size"],
                        r["tree"], r["op"]) == (components, page, tree, op)), 0.0)
                  for op in OPS]
        ax.bar([i + (offset - 1) * width for i in range(len(OPS))], values, width,
               label=tree)
    for i, op in enumerate(OPS):
        ratio = ratios.get((components, page, op))
        if ratio:
            ax.annotate(f"{ratio:.2f}x", (i, 1.0), xycoords=("data", "axes fraction"),
                        ha="center", va="bottom", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(OPS)), OPS)
    ax.set_ylabel("ops/s (median)")
    ax.set_title(f"{components}, page {page} (label: radixkv / SGLang rust)", fontsize=9,
                 pad=14)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="radixkv-bench-plot", description=__doc__)
    parser.add_argument("result", type=Path, help="JSON written by `radixkv bench ops --json`")
    parser.add_argument("png", type=Path, help="the picture to write")
    args = parser.parse_args(argv)
    draw(json.loads(args.result.read_text()), args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
