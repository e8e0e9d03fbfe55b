"""A real full disk for tests: a small tmpfs mounted for the test, filled to the last byte.

Mounting needs root; elsewhere the test skips (and fails under CI, tests/support/ci.py).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from tests.support.ci import missing


@contextlib.contextmanager
def small_disk(path: Path, megabytes: int = 16):
    """A tmpfs of ``megabytes`` at ``path`` for the block; unmounted afterwards."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        missing("root, to mount a small tmpfs (a real full disk)")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        missing(f"mount -t tmpfs ({mounted.stderr.strip()})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(path: Path, name: str = "filler") -> Path:
    """Take every free byte of ``path``'s filesystem with one file (``name``); returns it."""
    filler = path / name
    block = b"\0" * (64 * 1024)
    with open(filler, "wb", buffering=0) as handle:
        for size in (len(block), 4096, 1):
            try:
                while True:
                    handle.write(block[:size])
            except OSError:
                continue
    return filler
