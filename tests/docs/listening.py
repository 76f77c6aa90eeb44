"""Which TCP addresses the processes of a process group listen on, read from /proc (Linux):
how the doc runner checks that a fleet recipe binds one interface."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

PROC = Path("/proc")
_LISTEN = "0A"


def group_pids(group: int) -> list[int]:
    """The live processes whose process group is ``group``."""
    pids = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            if int(fields[2]) == group:
                pids.append(int(entry.name))
    return pids


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in (PROC / str(pid) / "fd").iterdir():
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:  # gone meanwhile, or not ours to read
        pass
    return inodes


def listeners(table: str) -> dict[str, tuple[str, int]]:
    """The LISTEN sockets of a /proc/net/tcp or tcp6 table: inode -> (address, port)."""
    found = {}
    for row in table.splitlines()[1:]:
        fields = row.split()
        if len(fields) < 10 or fields[3] != _LISTEN:
            continue
        address, port = fields[1].split(":")
        found[fields[9]] = (_address(address), int(port, 16))
    return found


def _address(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    # the kernel prints each 32-bit word in host (little-endian) order
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def group_listeners(group: int) -> list[tuple[str, int]]:
    """Every (address, port) the processes of ``group`` listen on."""
    tables: dict[str, tuple[str, int]] = {}
    for name in ("tcp", "tcp6"):
        path = PROC / "net" / name
        if path.exists():
            tables.update(listeners(path.read_text()))
    inodes = set().union(*(socket_inodes(pid) for pid in group_pids(group)))
    return sorted(tables[inode] for inode in inodes if inode in tables)


def is_wildcard(address: str) -> bool:
    return ipaddress.ip_address(address).is_unspecified
