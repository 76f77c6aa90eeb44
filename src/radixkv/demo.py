"""``radixkv demo`` (and ``make demo``): the exactness harness on its built-in default.

First runs ``radixkv verify`` with its defaults: a mixed workload of multi-turn chats
sharing system prompts and branching few-shot prompts, through a tiny float64 reference
model and a small prefix cache (so eviction happens all the time), for every supported
component combination (FULL with any of SWA, chunked local attention and MAMBA: the eight
of :func:`radixkv.supported_combinations`) at page sizes 1 and 16; every logits row must
be bitwise equal to the uncached run. Then the same with a host tier (:data:`HOST_ARGS`):
device pools so small that most reused prefixes were evicted from device memory and come
back from host memory, through copies that land after a random delay, out of order; each
run prints how many reused tokens the device served alone and how many needed host
memory. Takes about half a minute of CPU.
"""

from __future__ import annotations

from . import cli

HOST_ARGS = ["--capacity", "128", "--swa-capacity", "128", "--chunked-capacity", "128",
             "--mamba-states", "12", "--host-capacity", "4096", "--copy-delay", "3",
             "--copy-seed", "7"]
"""The ``radixkv verify`` options of the demo's host-tier part."""


def main() -> int:
    """Run the demo; returns a process exit code (0: every run PASSed)."""
    print("== without a host tier ==", flush=True)
    plain = cli.main(["verify"])
    print("\n== with a host tier: tiny device pools, large host pools ==", flush=True)
    with_host = cli.main(["verify", *HOST_ARGS])
    return max(plain, with_host)
