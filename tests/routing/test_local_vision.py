"""Local vision: an image for a model without vision, described by a local model (a test server).

The openai SDK over real HTTP; the vision model is tests/support/vision_server.py.
"""

import openai
import pytest

from routing.models import RouteDecision
from tests.support.chat_turns import tool_call_round
from tests.support.router import openai_client
from tests.support.vision_server import VisionServer, description_of

pytestmark = pytest.mark.django_db(transaction=True)

IMAGE = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8AAAA"
    "MBAQDJ/pLvAAAAAElFTkSuQmCC"
)
LOOK = [
    {"type": "text", "text": "what does the screenshot say?"},
    {"type": "image_url", "image_url": {"url": IMAGE}},
]


@pytest.fixture
def vision():
    server = VisionServer().start()
    yield server
    server.stop()


@pytest.fixture
def sdk(live_server, router_config, write_config, api_key, vision):
    router_config["local_vision"] = {
        "enabled": True,
        "base_url": vision.base_url,
        "model": "tiny-vision",
        "timeout_seconds": 1,
    }
    write_config(router_config)
    return openai_client(live_server, api_key)


def sent_content(upstream):
    return upstream.bodies()[-1]["messages"][0]["content"]


def test_an_image_for_a_model_without_vision_is_described_in_its_place(sdk, upstream, vision):
    for _ in range(2):
        sdk.chat.completions.create(model="text-only", messages=[{"role": "user", "content": LOOK}])
    content = sent_content(upstream)
    assert content[0] == LOOK[0]
    assert content[1] == {
        "type": "text",
        "text": f"[Image, described by tiny-vision: {description_of(IMAGE)}]",
    }
    # Asked once: the second request found the description by the image's hash.
    assert vision.described == [IMAGE]
    assert [r.status_code for r in RouteDecision.objects.all()] == [200, 200]


@pytest.mark.parametrize("mode", ["status_500", "empty", "slow"])
def test_a_failing_vision_model_falls_back_to_the_capability_rule(sdk, upstream, vision, mode):
    vision.mode = mode
    with pytest.raises(openai.UnprocessableEntityError):
        sdk.chat.completions.create(model="text-only", messages=[{"role": "user", "content": LOOK}])
    assert not RouteDecision.objects.exists()

    # On auto another candidate takes it: the cheapest model with vision.
    reply = sdk.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": LOOK}]
    )
    assert reply.headers["X-Router-Model"] == "echo-medium"
    assert sent_content(upstream) == LOOK


def test_on_auto_the_described_request_goes_to_the_cheapest_model_of_its_tier(
    sdk, upstream, vision
):
    reply = sdk.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": LOOK}]
    )
    assert reply.headers["X-Router-Model"] == "echo-small"  # no vision, the easy tier's cheapest
    assert "described by tiny-vision" in sent_content(upstream)[1]["text"]


def test_a_described_request_is_pruned_by_pinch_like_any_other(
    sdk, upstream, vision, router_config, write_config
):
    router_config["pinch"]["budget_tokens"] = 1000
    router_config["pinch"]["keep_last_turns"] = 1
    router_config["pinch"]["keep_last_tool_results"] = 1
    write_config(router_config)
    messages = [{"role": "user", "content": LOOK}]
    for k in range(3):
        messages += tool_call_round(k, f"log line {k}\n" * 800)
    sdk.chat.completions.create(model="text-only", messages=messages)
    row = RouteDecision.objects.get()
    assert row.pinch_final_tokens < row.pinch_original_tokens
    assert "described by tiny-vision" in sent_content(upstream)[1]["text"]


def test_local_vision_is_off_by_default(live_server, router_config, api_key, upstream, vision):
    sdk = openai_client(live_server, api_key)
    with pytest.raises(openai.UnprocessableEntityError):
        sdk.chat.completions.create(model="text-only", messages=[{"role": "user", "content": LOOK}])
    assert vision.described == []
