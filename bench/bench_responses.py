"""What the Responses API's translation costs a request, next to merely parsing it.

Codex CLI's requests reach the router as Responses items and are translated
to chat messages before the pipeline plans on them (and, for a chat
upstream, the answer back). This replays the shared corpus as Codex would
send it: each request ``messages[:t]`` of each conversation rewritten as
``input`` items (messages, ``function_call``, ``function_call_output``), and
times ``routing.protocols.responses.request.responses_to_chat`` on it,
per 100k tokens of conversation. Beside it, as a floor, ``json.loads`` and
``json.dumps`` of the same Responses body: the router must parse it anyway.
The answer side is timed once per request: a 2,000-character chat answer
turned into a ``response`` and, chunk by chunk, into the event stream.

Run: ``.venv/bin/python bench/bench_responses.py [--rounds N]``
(``CORPUS_DIR`` overrides where the conversations are read from).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_prune import PER, median_ns, per_100k_us
from bench.corpus import bench_conversations
from bench.machine import describe_machine
from pinch import extract_text
from pinch.tokens import estimate_tokens
from routing.protocols.responses.reply import ResponseEvents, to_response
from routing.protocols.responses.request import responses_to_chat

ANSWER = "word " * 400  # a 2,000-character answer


def as_items(messages: list[dict]) -> list[dict]:
    """Chat messages as the Responses items a client would have sent."""
    items = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id") or "call",
                    "output": extract_text(message),
                }
            )
            continue
        text = extract_text(message)
        if text or role != "assistant":
            items.append({"type": "message", "role": role, "content": text})
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id") or "call",
                    "name": function.get("name") or "tool",
                    "arguments": function.get("arguments") or "{}",
                }
            )
    return items


def answer_chunks() -> list[dict]:
    pieces = [ANSWER[i : i + 20] for i in range(0, len(ANSWER), 20)]
    chunks = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 400}})
    return chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed runs per request (median)")
    args = parser.parse_args()

    folder, conversations = bench_conversations()
    translate, floor = [], []
    for conversation in conversations:
        for request in conversation.requests():
            body = {"model": "auto", "input": as_items(request), "stream": True}
            if not body["input"]:
                continue
            raw = json.dumps(body)
            tokens = max(estimate_tokens(raw), 1)
            translate.append((median_ns(lambda b=body: responses_to_chat(b), args.rounds), tokens))
            floor.append((median_ns(lambda r=raw: json.dumps(json.loads(r)), args.rounds), tokens))

    _, source = responses_to_chat({"model": "auto", "input": "hi"})
    completion = {"choices": [{"message": {"role": "assistant", "content": ANSWER}}], "usage": {}}
    chunks = answer_chunks()

    def stream():
        events = ResponseEvents(source, "resp_1", "auto")
        for chunk in chunks:
            events.feed(chunk)
        events.end()

    plain_ns = median_ns(lambda: to_response(completion, source, "resp_1", "auto"), 101)
    stream_ns = median_ns(stream, 101)

    print(
        f"# machine: {describe_machine()}; corpus={folder} "
        f"({len(conversations)} conversations, {len(translate)} requests); rounds={args.rounds}"
    )
    print("µs per 100k tokens of request: median and worst per request, overall = sum/sum")
    print(f"{'':34} {'median':>8} {'worst':>8} {'overall':>8} {'x json':>7}")
    floor_overall = sum(ns for ns, _ in floor) / 1000 * PER / sum(t for _, t in floor)
    for name, rows in (("responses_to_chat", translate), ("json.loads+dumps (floor)", floor)):
        speeds = [per_100k_us(ns, t) for ns, t in rows]
        overall = sum(ns for ns, _ in rows) / 1000 * PER / sum(t for _, t in rows)
        print(
            f"{name:34} {statistics.median(speeds):>8.1f} {max(speeds):>8.1f} "
            f"{overall:>8.1f} {overall / floor_overall:>7.2f}"
        )
    print(
        f"answer, 2,000 chars, 101 runs: response object {plain_ns / 1000:.1f} µs; "
        f"event stream ({len(chunks)} chunks) {stream_ns / 1000:.1f} µs"
    )


if __name__ == "__main__":
    main()
