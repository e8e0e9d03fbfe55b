"""Recorded agent sessions: the one loader for the replay, the benchmarks and the tests.

A session file is the corpus format (``../shared/corpus/README.md``):
``{"source": ..., "meta": {...}, "messages": [...]}``, optionally with the
tool definitions the agent offered under ``tools`` or ``meta.tools``; or an
agent's own session log (``*.jsonl``: Claude Code's or Codex CLI's, read by
``routing.replay.transcripts``). The
corpus lives outside the repository, beside the checkout, and is not copied
in; ``CORPUS_DIR`` points elsewhere. No Django here: the pure pinch tests load
sessions too.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from routing.replay.transcripts import UNREADABLE, looks_like_transcript, transcript_sessions

_REPO = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS_DIR = _REPO.parent / "shared" / "corpus" / "conversations"

# The most of one file the loader reads: well above the longest agent log seen (tens of
# MB), far below what a file that never ends (a link to /dev/zero) would take.
MAX_FILE_BYTES = 256 * 1024 * 1024


class CorpusError(ValueError):
    """A session cannot be loaded (bad path, bad file); the message says which and why."""


@dataclass(frozen=True)
class Session:
    name: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    # When the model wrote each assistant message (its index -> POSIX
    # seconds), where the source log recorded it (``assistant_times``).
    times: dict[int, float] = field(default_factory=dict)

    @property
    def family(self) -> str:
        """The agent that recorded it, without version or notes: ``meta.agent`` up to them.

        "Claude Code 2.1.6" is Claude Code, "mini-swe-agent 2.2.7" mini-swe-agent,
        "OpenHands software-agent-sdk (...)" OpenHands.
        """
        agent = self.meta.get("agent")
        words: list[str] = []
        for word in agent.split() if isinstance(agent, str) else ():
            if any(c.isdigit() for c in word) or word.startswith("(") or word.islower():
                break
            words.append(word)
        return " ".join(words) or (
            agent.split()[0] if isinstance(agent, str) and agent else "unknown"
        )

    def turns(self) -> Iterator[int]:
        """Indexes of the assistant messages that had a request before them."""
        for t, message in enumerate(self.messages):
            if t > 0 and isinstance(message, dict) and message.get("role") == "assistant":
                yield t

    def requests(self) -> Iterator[list[dict[str, Any]]]:
        """The request the agent sent before each assistant turn: ``messages[:t]``."""
        for t in self.turns():
            yield self.messages[:t]


def corpus_dir() -> Path:
    """The conversations folder: ``$CORPUS_DIR`` if set, else the shared default."""
    configured = os.environ.get("CORPUS_DIR")
    return Path(configured) if configured else DEFAULT_CORPUS_DIR


def load_session(path: Path) -> Session:
    """One session file: the corpus format, or an agent's session log (``*.jsonl``) of one
    context window (``load_file`` reads every window of a log with compactions)."""
    sessions = load_file(path)
    if len(sessions) > 1:
        raise CorpusError(f"{path}: {len(sessions)} context windows (compactions), not one")
    return sessions[0]


def load_file(path: Path, max_bytes: int = MAX_FILE_BYTES) -> list[Session]:
    """The sessions in one file: a conversation file's one, or a log's windows, in order
    (the second named ``<file>#2``). A file that is not a regular one (a FIFO, a
    device, through a link too) is refused without being opened; one of more than
    ``max_bytes`` without being read."""
    path = Path(path)
    text = _text(path, max_bytes)
    if path.suffix == ".jsonl":
        windows = _transcript(path, text)
        names = [path.name, *(f"{path.name}#{k}" for k in range(2, len(windows) + 1))]
        return [_session(name, {**data, "source": str(path)}) for name, data in zip(names, windows)]
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise CorpusError(f"{path}: cannot read a JSON conversation ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise CorpusError(f"{path}: not a conversation file (no 'messages' list)")
    return [_session(path.name, data)]


def _session(name: str, data: dict[str, Any]) -> Session:
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    tools = data.get("tools", meta.get("tools"))
    return Session(
        name=name,
        messages=data["messages"],
        tools=tools if isinstance(tools, list) and tools else None,
        source=data.get("source", "") if isinstance(data.get("source"), str) else "",
        meta=meta,
        times=_times(data.get("assistant_times")),
    )


def _text(path: Path, max_bytes: int) -> str:
    """The file's text, read only if it is a regular file of at most ``max_bytes``."""
    try:
        found = os.stat(path)  # through a link: /dev/zero is a device
        if not stat.S_ISREG(found.st_mode):
            raise CorpusError(f"{path}: not a regular file (a FIFO, device or socket), not read")
        if found.st_size > max_bytes:
            raise CorpusError(f"{path}: {found.st_size} bytes, over the limit of {max_bytes}")
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)  # a file that grew since: still bounded
        if len(raw) > max_bytes:
            raise CorpusError(f"{path}: more than {max_bytes} bytes, over the limit")
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CorpusError(f"{path}: not text (a binary file?)") from None
    except OSError as error:
        raise CorpusError(f"{path}: cannot read it ({error.strerror or error})") from None


def _transcript(path: Path, text: str) -> list[dict[str, Any]]:
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), "")
    if first and not looks_like_transcript(first):
        raise CorpusError(
            f"{path}: not a Claude Code or Codex CLI session log (JSON records a line)"
        )
    return transcript_sessions(lines)


def _times(raw: Any) -> dict[int, float]:
    """``assistant_times`` as {message index: POSIX seconds}; what does not parse is left out."""
    times: dict[int, float] = {}
    for index, stamp in raw.items() if isinstance(raw, dict) else ():
        try:
            stamp = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
            times[int(index)] = stamp.timestamp()
        except ValueError:
            continue
    return times


def load_sessions(
    paths: Iterable[str | Path] | None = None,
    skipped: list[str] | None = None,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> list[Session]:
    """Sessions from files and directories: in a directory, every ``*.json`` in it and every
    ``*.jsonl`` under it (Codex CLI files its logs by day), by path.

    No paths: the corpus folder (``corpus_dir()``). A log with compactions
    gives one session per context window. In a directory, a session log with
    no request of its own (a Claude Code subagent's, all sidechain) is passed
    over; named on its own, it is loaded as it is. ``skipped``: a list that
    takes the reason of each file that cannot be loaded (the run goes on
    without it); without one, such a file raises CorpusError.
    """

    def load(file: Path) -> list[Session]:
        try:
            loaded = load_file(file, max_file_bytes)
        except CorpusError as error:
            if skipped is None:
                raise
            skipped.append(str(error))
            return []
        notes = loaded[0].meta.get("notes") if loaded else None
        if skipped is not None and notes and UNREADABLE in notes[0]:
            skipped.append(f"{file}: {notes[0]}")
        return loaded

    sessions: list[Session] = []
    for raw in [corpus_dir()] if paths is None else paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted([*path.glob("*.json"), *path.rglob("*.jsonl")])
            if not found:
                raise CorpusError(
                    f"{path}: no *.json conversation files or *.jsonl session logs "
                    "(Claude Code, Codex CLI) in this directory"
                )
            for file in found:
                for session in load(file):
                    if file.suffix != ".jsonl" or any(session.turns()):
                        sessions.append(session)
        elif path.exists():
            sessions.extend(load(path))
        else:
            raise CorpusError(f"{path}: no such file or directory")
    if not sessions:
        raise CorpusError("no conversation files given" + "".join(f"; {s}" for s in skipped or ()))
    return sessions
