"""A memo of long texts' hashes changes no hash: the ledger's digest and the probe's
fingerprints come out as they did when each message was hashed afresh."""

import json
from hashlib import blake2b

from hypothesis import given, settings
from hypothesis import strategies as st

from pinch.digests import MEMO_MIN_CHARS
from pinch.ledger import message_hash
from pinch.prefix import message_fingerprints
from pinch.tokens import extract_text


def hashed_afresh(message) -> str:
    """``message_hash`` as written before the memo: the ledgers kept since were made by it."""
    digest = blake2b(digest_size=16)
    digest.update(str(message.get("role") if isinstance(message, dict) else None).encode())
    digest.update(b"\0")
    digest.update(extract_text(message).encode("utf-8", "surrogatepass"))
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            for part in (call.get("id"), function.get("name"), function.get("arguments")):
                digest.update(b"\0")
                digest.update(str(part).encode("utf-8", "surrogatepass"))
    if isinstance(message, dict) and message.get("tool_call_id") is not None:
        digest.update(b"\0" + str(message["tool_call_id"]).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


# Short and long texts (the memo keeps only texts of MEMO_MIN_CHARS and more), with
# non-ASCII and lone surrogates.
letters = st.sampled_from(["a", "b", "\n", "é", "字", "\ud800", '"', "\0"])
texts = st.one_of(
    st.text(letters, max_size=8),
    st.builds(lambda seed, n: (seed or "x") * n, st.text(letters, max_size=4), st.just(1200)),
)
calls = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.sampled_from(["c1", "c2", 3]),
            "type": st.just("function"),
            "function": st.fixed_dictionaries(
                {"name": st.sampled_from(["bash", "read"]), "arguments": texts}
            ),
        }
    ),
    max_size=2,
)
messages = st.one_of(
    st.builds(
        lambda role, text: {"role": role, "content": text},
        st.sampled_from(["system", "user", "assistant", "tool"]),
        texts,
    ),
    st.builds(
        lambda text, id_: {"role": "tool", "tool_call_id": id_, "content": text},
        texts,
        st.sampled_from(["c1", "c2", 3]),
    ),
    st.builds(
        lambda text, c: {"role": "assistant", "content": text, "tool_calls": c}, texts, calls
    ),
    st.builds(lambda text: {"role": "user", "content": [{"type": "text", "text": text}]}, texts),
    st.builds(lambda text: {"role": "user", "content": None, "name": text}, texts),
    st.just("not a message"),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(messages, max_size=6), st.lists(messages, max_size=6))
def test_hashes_through_a_memo_are_the_hashes_made_afresh(first, second):
    memo: dict = {}
    # Two requests through one memo: the second finds the first's texts (and its own
    # repeats) kept, behind the same or another role, call or field.
    for request in (first, second, first + second):
        copied = json.loads(json.dumps(request))  # a new request's strings, equal not identical
        assert [message_hash(m, memo) for m in copied] == [hashed_afresh(m) for m in request]
        assert message_fingerprints(copied, memo) == message_fingerprints(request)


def test_a_long_text_hashed_behind_one_role_is_not_reused_behind_another():
    memo: dict = {}
    text = "x" * MEMO_MIN_CHARS
    as_user = message_hash({"role": "user", "content": text}, memo)
    as_tool = message_hash({"role": "tool", "content": text}, memo)

    assert memo and as_user != as_tool
    assert as_tool == hashed_afresh({"role": "tool", "content": text})
