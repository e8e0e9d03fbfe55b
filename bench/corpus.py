"""Load the shared corpus of real agent conversations for benchmarks and tests.

The corpus lives outside the repository (``../shared/corpus/conversations``,
beside the checkout) and is not copied in: it is large and carries its own
licence notices. ``CORPUS_DIR`` points elsewhere. Callers check
``corpus_dir().is_dir()`` and skip with a clear reason when it is absent, so a
fresh clone still runs its tests.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS_DIR = _REPO.parent / "shared" / "corpus" / "conversations"


@dataclass(frozen=True)
class Conversation:
    name: str
    source: str
    messages: list[dict[str, Any]]


def corpus_dir() -> Path:
    """Return the conversations folder: ``$CORPUS_DIR`` if set, else the shared default."""
    configured = os.environ.get("CORPUS_DIR")
    return Path(configured) if configured else DEFAULT_CORPUS_DIR


def bench_conversations() -> tuple[Path, list[Conversation]]:
    """The corpus folder and its conversations, for a benchmark; exits when it is absent."""
    folder = corpus_dir()
    if not folder.is_dir():
        sys.exit(f"no corpus at {folder} (set CORPUS_DIR)")
    return folder, load_conversations(folder)


def load_conversations(directory: Path | None = None) -> list[Conversation]:
    """Read every ``*.json`` conversation in ``directory``, sorted by file name."""
    folder = corpus_dir() if directory is None else directory
    conversations = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        conversations.append(
            Conversation(name=path.stem, source=data.get("source", ""), messages=data["messages"])
        )
    return conversations


def requests_of(messages: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Yield the request an agent sent before each assistant turn: ``messages[:t]``.

    Replaying a session this way gives the sizes the router really saw, from
    the first short request to the longest one.
    """
    for t, message in enumerate(messages):
        if message.get("role") == "assistant" and t > 0:
            yield messages[:t]
