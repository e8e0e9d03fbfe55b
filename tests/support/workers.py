"""A served router's gunicorn workers, seen from outside: their pids and the connections each
holds (read from /proc, as ``ss -tnp`` does)."""

from __future__ import annotations

import os


def worker_pids(served) -> list[int]:
    """The pids of the workers of the gunicorn master serving ``served``."""
    master = served.process.pid
    with open(f"/proc/{master}/task/{master}/children") as children:
        return [int(pid) for pid in children.read().split()]


def connections_by_worker(served, workers: list[int]) -> dict[int, int]:
    """How many established connections to ``served``'s port each of ``workers`` holds."""
    holder = {}  # a socket's inode -> the worker with a descriptor of it
    for pid in workers:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except FileNotFoundError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                holder[int(target[8:-1])] = pid
    held = dict.fromkeys(workers, 0)
    with open(f"/proc/{workers[0]}/net/tcp") as table:
        for line in table.read().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            established = fields[3] == "01"
            inode = int(fields[9])
            if established and local_port == served.port and inode in holder:
                held[holder[inode]] += 1
    return held
