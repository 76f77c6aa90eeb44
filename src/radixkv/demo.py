"""``radixkv demo`` (and ``make demo``): the exactness harness on its built-in default.

Runs ``radixkv verify`` with its defaults: a mixed workload of multi-turn chats sharing
system prompts and branching few-shot prompts, through a tiny float64 reference model and
a small prefix cache (so eviction happens all the time), for every supported component
combination (FULL with any of SWA, chunked local attention and MAMBA: the eight of
:func:`radixkv.supported_combinations`) at page sizes 1 and 16; every logits row must be
bitwise equal to the uncached run. Takes about ten seconds on 2 cores.
"""

from __future__ import annotations

from . import cli


def main() -> int:
    """Run the demo; returns a process exit code (0: every run PASSed)."""
    return cli.main(["verify"])
