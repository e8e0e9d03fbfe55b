"""The config blocks of session routing and local vision (docs/routing.md).

Apart from routing/config/schema.py, which they are part of, to keep each
module short; validated by the same strict models.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from routing.config.strict import Strict


class SessionRoutingConfig(Strict):
    """Auto decided per conversation, at task boundaries (routing/session_routing.py)."""

    # false: every request is classified and routed on its own (the old way).
    enabled: bool = True
    # How long a model without a cache block (a provider that caches by
    # itself: OpenAI keeps a prefix 5 to 10 minutes) is taken to stay warm.
    automatic_cache_seconds: float = Field(300.0, gt=0)


class BackgroundConfig(Strict):
    """Work that is not the agent's main loop, sent to the cheapest tier (routing/background.py)."""

    enabled: bool = True
    # Client model names (globs) that are an agent's small, fast model.
    model_names: tuple[str, ...] = ("claude-haiku-*", "claude-3-5-haiku-*", "claude-3-haiku-*")
    # A request without tools or tool results up to this many prompt tokens.
    short_tokens: int = Field(1000, ge=0)


class LocalVisionConfig(Strict):
    """Images described by a local model for a model without vision (routing/local_vision.py)."""

    enabled: bool = False
    # Any OpenAI-compatible chat-completions API with a vision model (Ollama's /v1).
    base_url: str = "http://localhost:11434/v1"
    model: str = "qwen2.5vl:7b"
    api_key_env: str | None = None
    timeout_seconds: float = Field(30.0, gt=0)
    max_tokens: int = Field(400, gt=0)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value):
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")
