"""What the recall store writes per request: the new originals only, against every one named.

Each request's payload names, by handle, every tool result pinch compressed
or capped (PinchOutcome.recallable); the store is handed only the ones the
request before did not carry the same way (PinchOutcome.to_store,
routing/pruning.py). This replays the corpus through the request path's
pinch (the shipped config: payback steps, recall on; one conversation's
ledger carried as a worker carries it) and counts both, in originals and in
bytes, and the largest single request's write.

Run: ``.venv/bin/python bench/recall_writes.py`` (``CORPUS_DIR`` overrides the folder).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
django.setup()  # the request path's pinch reads settings for its relevance edge

from bench.corpus import bench_conversations  # noqa: E402
from routing.config import PinchConfig  # noqa: E402
from routing.prefix_probe import PrefixProbe  # noqa: E402
from routing.pruning import LedgerSlot, pinch_messages  # noqa: E402


def size(originals: dict) -> int:
    return sum(len(text.encode("utf-8", "replace")) for text in originals.values())


def main() -> None:
    _, sessions = bench_conversations()
    config = PinchConfig()
    named = written = named_bytes = written_bytes = largest = requests = 0
    for session in sessions:
        slot = LedgerSlot(PrefixProbe(), session.name)
        messages = session.messages
        for t in (t for t, m in enumerate(messages) if t > 0 and m.get("role") == "assistant"):
            _, outcome = pinch_messages(messages[:t], config, 0, slot=slot)
            requests += 1
            named += len(outcome.recallable)
            named_bytes += size(outcome.recallable)
            written += len(outcome.to_store)
            written_bytes += size(outcome.to_store)
            largest = max(largest, size(outcome.to_store))
    print(f"{len(sessions)} sessions, {requests} requests")
    print(f"originals named by the payloads: {named:,} ({named_bytes:,} bytes)")
    print(f"originals handed to the store:   {written:,} ({written_bytes:,} bytes)")
    print(f"largest write of one request:    {largest:,} bytes")


if __name__ == "__main__":
    main()
