"""A result the model recalled in two requests is sent whole from the next request on, by
any worker: the recall's mark goes through the decision's write, pinch reads it back."""

import openai
import pytest

from routing.models import RouteDecision
from routing.prefix_probe import forget_conversations
from tests.routing.test_payback_pipeline import session_requests
from tests.routing.test_recall_store_instances import NAMED
from tests.support.recall import record

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_result_recalled_twice_is_sent_whole_from_then_on(
    live_server, api_key, router_config, write_config, upstream, corpus_dir
):
    router_config["pinch"].update(
        payback={"enabled": True}, budget_tokens=8000, recall={"enabled": True}
    )
    write_config(router_config)
    sdk = openai.OpenAI(base_url=live_server.url + "/v1", api_key=api_key, max_retries=0)
    last = session_requests(corpus_dir)[-1]
    sdk.chat.completions.create(model="echo-hard", messages=last)
    sent = upstream.bodies()[-1]["messages"]
    named = [h for m in sent if m["role"] == "tool" for h in NAMED.findall(m["content"])]
    assert len(named) >= 2
    wanted, other = named[0], named[1]
    index = int(wanted[1:])
    conversation = RouteDecision.objects.latest("id").conversation

    # Recalled once: still compressed (a first recall does not pay a rewrite).
    record(conversation, {}, recalled=[wanted])
    sdk.chat.completions.create(model="echo-hard", messages=last)
    assert upstream.bodies()[-1]["messages"][index] != last[index]

    # Recalled in a second request: sent whole, by the worker that served the request
    # before (its memory of the conversation says so, no query of the store)...
    record(conversation, {}, recalled=[wanted])
    sdk.chat.completions.create(model="echo-hard", messages=last)
    assert upstream.bodies()[-1]["messages"][index] == last[index]

    # ... and by a worker that served none of it (the conversation's row says so).
    forget_conversations()
    sdk.chat.completions.create(model="echo-hard", messages=last)
    again = upstream.bodies()[-1]["messages"]
    assert again[index] == last[index]
    assert NAMED.findall(again[int(other[1:])]["content"]) == [other]
