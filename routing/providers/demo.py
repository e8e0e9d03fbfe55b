"""The built-in demo provider (``kind: demo``): answers without calling any model.

It exists so a router started on the shipped config, with no Ollama and no
provider key, can be called at once (``model: demo``) and every part of the
pipeline (keys, pinch, the decision row, the dashboard) seen working. Every
answer says plainly that no language model was called: the text starts with
``DEMO_NOTICE`` and the ``model`` field is the demo's upstream name. It sends
nothing anywhere and cannot fail.
"""

import time
import uuid

from pinch import extract_text
from routing.protocols.base import DONE, Event, StreamReply
from routing.providers.base import Provider
from routing.selection import measure_prompt_tokens

DEMO_NOTICE = "[demo provider: no language model was called]"
QUOTE_CHARS = 200  # enough of the caller's last message to show it arrived


def demo_answer(body: dict) -> str:
    last_user = next(
        (m for m in reversed(body.get("messages") or []) if m.get("role") == "user"), {}
    )
    said = " ".join(extract_text(last_user).split())
    if len(said) > QUOTE_CHARS:
        said = said[:QUOTE_CHARS] + "…"
    return (
        f"{DEMO_NOTICE} The router received your message ({said!r}) and would send it to "
        "the model you configure. Point ROUTER_CONFIG at a config with a real provider "
        "(README, 'Configure it'); 'auto' then routes among its models."
    )


class _NoConnection:
    """What a StreamReply closes when nothing was opened."""

    def close(self):
        pass


class DemoProvider(Provider):
    def _usage(self, body: dict, answer: str) -> dict:
        prompt = measure_prompt_tokens(body.get("messages") or [], body.get("tools"))
        completion = max(1, len(answer) // 3)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _envelope(self, body: dict, object_name: str) -> dict:
        return {
            "id": f"chatcmpl-demo-{uuid.uuid4().hex[:12]}",
            "object": object_name,
            "created": int(time.time()),
            "model": body.get("model") or "demo",
            "system_fingerprint": "router-demo",
        }

    def chat(self, body: dict, timeout: float | None = None, context=None) -> dict:
        answer = demo_answer(body)
        return {
            **self._envelope(body, "chat.completion"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "finish_reason": "stop",
                }
            ],
            "usage": self._usage(body, answer),
        }

    def chat_stream(self, body: dict, context=None) -> StreamReply:
        answer = demo_answer(body)
        envelope = self._envelope(body, "chat.completion.chunk")

        def chunk(delta, finish=None, **extra):
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            payload = {**envelope, "choices": [choice], **extra}
            return Event.of(payload)

        events = [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": answer}),
            chunk({}, "stop"),
        ]
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {**envelope, "choices": [], "usage": self._usage(body, answer)}
            events.append(Event.of(usage))
        events.append(DONE)
        return StreamReply(_NoConnection(), iter(events))
