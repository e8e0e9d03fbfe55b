"""Images described by a local vision model, for a model that cannot see them.

A request with an image cannot go to a model without vision: a pinned one
answers 422, and auto must pick a model with vision, often of a dearer tier.
With ``local_vision.enabled`` (off by default), each image of such a request
is sent once to a configured vision model on any OpenAI-compatible API
(Ollama's ``/v1`` is the documented example) and replaced, in place, by a
text part holding its description; the request then plans like any other:
classified, pruned by pinch, measured and sent.

Descriptions are cached per process by the SHA-256 of the image's URL (a
``data:`` URL carries the bytes), bounded, so an agent that resends the same
screenshot on every turn asks the vision model once and the payload stays
the same turn after turn (the provider's prompt cache keeps hitting).

Any failure (the model unreachable, slow, an error status, an empty or odd
answer) logs ``local_vision_unavailable`` and leaves the request as it was,
so today's capability rule decides: 422 for a pinned model, a model with
vision on auto. Only chat-completions requests are described; a Messages or
Responses request keeps its images (its upstream body is built from the
client's own blocks, which the description would not reach).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace

from routing.config import ModelConfig, RouterConfig
from routing.config.schema import ProviderConfig
from routing.errors import ProviderError
from routing.providers import provider_for
from routing.pruning import BoundedMemo

log = logging.getLogger(__name__)

PROMPT = (
    "Describe this image for a coding assistant that cannot see it. Transcribe any text, "
    "code, error messages and numbers exactly; then say briefly what the image shows."
)
IMAGE_PARTS = ("image_url", "input_image")
PROVIDER_NAME = "local_vision"
_descriptions = BoundedMemo(max_items=2_000)


def _image_url(part: dict) -> str | None:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    return url if isinstance(url, str) and url else None


def _describe(url: str, config: RouterConfig) -> str:
    """The vision model's description of the image at ``url``; ProviderError on failure."""
    key = hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()
    found = _descriptions.get(key)
    if found is not None:
        return found
    vision = config.local_vision
    settings = ProviderConfig(
        kind="openai",
        base_url=vision.base_url,
        api_key_env=vision.api_key_env,
        timeout_seconds=vision.timeout_seconds,
        connect_timeout_seconds=min(vision.timeout_seconds, 5.0),
    )
    body = {
        "model": vision.model,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": PROMPT},
                    {"type": "image_url", "image_url": {"url": url}},
                ],
            }
        ],
        "max_tokens": vision.max_tokens,
        "temperature": 0,
    }
    answer = provider_for(PROVIDER_NAME, settings).chat(body, timeout=vision.timeout_seconds)
    try:
        text = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as error:
        raise ProviderError("malformed", "the vision model's answer has no text") from error
    if not isinstance(text, str) or not text.strip():
        raise ProviderError("malformed", "the vision model answered with no description")
    text = f"[Image, described by {vision.model}: {text.strip()}]"
    _descriptions[key] = text
    return text


def described_messages(messages, config: RouterConfig) -> list:
    """``messages`` with every image part replaced by its description (ProviderError on failure)."""
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or not any(
            isinstance(p, dict) and p.get("type") in IMAGE_PARTS for p in content
        ):
            out.append(message)
            continue
        parts = []
        for part in content:
            url = _image_url(part) if isinstance(part, dict) else None
            if isinstance(part, dict) and part.get("type") in IMAGE_PARTS:
                if url is None:
                    raise ProviderError("malformed", "an image part without a URL")
                part = {"type": "text", "text": _describe(url, config)}
            parts.append(part)
        out.append({**message, "content": parts})
    return out


def with_local_vision(request, config: RouterConfig, model: ModelConfig | None):
    """``request`` with its images described when ``model`` has no vision; else as it was."""
    if not config.local_vision.enabled or model is None or model.has("vision"):
        return request
    if request.source is not None or not request.has_images:
        return request
    try:
        messages = described_messages(request.messages, config)
    except ProviderError as error:
        log.warning("local_vision_unavailable reason=%s", error.message)
        return request
    return replace(request, body={**request.body, "messages": messages}, messages=messages)


def forget_descriptions() -> None:
    """Empty the process's cache of descriptions."""
    _descriptions.clear()
