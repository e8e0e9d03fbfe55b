"""Each body is checked by its own protocol's schema once; a translation is not checked again."""

import json

import pytest

from routing.protocols import schema
from routing.protocols.chat import request as chat_request
from routing.protocols.messages import request as messages_request
from routing.protocols.messages.request import parse_messages_body
from routing.protocols.responses import request as responses_request
from routing.protocols.responses.request import parse_responses_body

MESSAGES = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 100,
    "messages": [
        {"role": "user", "content": "list the files"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}],
        },
    ],
}
RESPONSES = {
    "model": "gpt-5.1-codex",
    "input": [
        {"type": "message", "role": "user", "content": "list the files"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
    ],
}


def counting(monkeypatch, module, name):
    model = getattr(module, name)
    calls = []
    original = model.model_validate

    def validate(body, *args, **kwargs):
        calls.append(name)
        return original(body, *args, **kwargs)

    monkeypatch.setattr(model, "model_validate", validate)
    return calls


@pytest.mark.parametrize(
    ("parse", "body", "module", "schema"),
    [
        (parse_messages_body, MESSAGES, messages_request, "MessagesBody"),
        (
            lambda raw: parse_responses_body(raw, None),
            RESPONSES,
            responses_request,
            "ResponsesBody",
        ),
    ],
    ids=["messages", "responses"],
)
def test_a_translated_body_is_checked_by_its_own_schema_only(
    monkeypatch, parse, body, module, schema
):
    own = counting(monkeypatch, module, schema)
    chat = counting(monkeypatch, chat_request, "ChatBody")

    request = parse(json.dumps(body).encode())

    assert own == [schema] and chat == []
    assert [m["role"] for m in request.messages][-2:] == ["assistant", "tool"]
    assert request.model == body["model"]


def test_a_translation_past_the_message_bound_is_refused(monkeypatch):
    monkeypatch.setattr(schema, "MAX_MESSAGES", 2)
    with pytest.raises(schema.RouterError) as refused:
        parse_messages_body(json.dumps(MESSAGES).encode())
    assert refused.value.status == 400 and "limit is 2" in refused.value.message
