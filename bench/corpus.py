"""The corpus for a benchmark: the sessions ``routing.replay.corpus`` loads, or exit saying why.

``routing.replay.corpus`` is the one loader (replay, benchmarks, tests); a benchmark
has no use for a missing corpus, so it stops with the folder it looked in.
Every corpus benchmark times each request ``--rounds`` times and reports the
median, so that option is declared here once.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from routing.replay.corpus import Session, corpus_dir, load_sessions


def bench_conversations() -> tuple[Path, list[Session]]:
    """The corpus folder and its sessions; exits when it is absent."""
    folder = corpus_dir()
    if not folder.is_dir():
        sys.exit(f"no corpus at {folder} (set CORPUS_DIR)")
    return folder, load_sessions([folder])


def corpus_arguments(doc: str, rounds: int) -> argparse.ArgumentParser:
    """A corpus benchmark's parser: its docstring's first line, and ``--rounds``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=rounds, help="timed runs per request (median)"
    )
    return parser
