"""What a process holds of the network, read from /proc: the e2e tests' check that a
server (mysqld, postgres) listens on no TCP or UDP port, only on its unix socket."""
from __future__ import annotations

import os
from pathlib import Path

LISTEN = "0A"  # /proc/net/tcp's state column for a listening socket


def inet_inodes(pid: int, listening_only: bool = False) -> set[str]:
    """Inodes of the TCP and UDP sockets in pid's network namespace (a container's own, not
    the host's), only TCP's listening ones when asked."""
    files = ("tcp", "tcp6") if listening_only else ("tcp", "tcp6", "udp", "udp6")
    out = set()
    for f in files:
        try:
            lines = Path(f"/proc/{pid}/net", f).read_text().splitlines()[1:]
        except OSError:
            continue
        out |= {c[9] for c in map(str.split, lines) if not listening_only or c[3] == LISTEN}
    return out


def socket_inodes(pid: int) -> set[str]:
    """The socket inodes pid holds; none when it has exited since it was listed
    (a backend of a query that just ended)."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except FileNotFoundError:
        return set()
    out = set()
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out
