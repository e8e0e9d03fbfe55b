"""The one strict schema for the YAML file and the admin overrides.

An unknown key or a bad value fails with the key's dotted path in the message
(``pinch.budget_tokens: Input should be greater than 0``). The file and the
admin overrides are validated by the same models, so a value the file would
refuse is refused in admin too. Provider keys never appear here: only the NAME
of the environment variable that holds one.
"""

from __future__ import annotations

import os
from fnmatch import fnmatchcase
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator, model_validator

from pinch.steps import CacheModel
from routing.config.cache import KIND_CACHE, cache_model
from routing.config.pinch_blocks import PinchConfig
from routing.config.routing_blocks import BackgroundConfig, LocalVisionConfig, SessionRoutingConfig
from routing.config.strict import Strict
from routing.validation import describe, dotted, known_keys


class ConfigError(ValueError):
    """The configuration is invalid; the message names the offending key."""


class ProviderConfig(Strict):
    # openai: any chat-completions API; anthropic: the Messages API (docs/anthropic.md);
    # demo: the built-in demo, which calls nothing
    kind: Literal["openai", "anthropic", "demo"] = "openai"
    base_url: str | None = None
    api_key_env: str | None = None
    # Deadlines per upstream attempt (routing/providers/deadlines.py): a plain
    # answer must arrive in full within timeout_seconds of the start; a stream
    # must send its first event within timeout_seconds, then one at least every
    # stream_idle_seconds.
    timeout_seconds: float = Field(120.0, gt=0)
    stream_idle_seconds: float = Field(60.0, gt=0)
    connect_timeout_seconds: float = Field(5.0, gt=0)
    # The most bytes a plain (not streamed) answer may have, decoded (a bigger
    # one is a 502, so a worker's memory stays bounded), and whether a
    # compressed answer is taken at all (the router asks for identity; a gzip
    # bomb of a few KB decodes to gigabytes).
    max_answer_bytes: int = Field(32 * 1024 * 1024, gt=0)
    accept_compressed: bool = False
    # kind anthropic: the anthropic-version header (from 2026-10-21 the API takes
    # no temperature/top_p: they are not sent), and anthropic-beta flags to send.
    anthropic_version: str = "2026-10-21"
    anthropic_beta: tuple[str, ...] = ()
    # kind openai: the upstream also serves the Responses API (/responses), as
    # OpenAI does; Responses clients (Codex CLI) are then passed through to it
    # natively instead of translated to chat completions.
    responses_api: bool = False

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value):
        if value is None:
            return value
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value):
        # A name, never a key: reject values that look like secrets pasted in.
        if value is not None and not value.replace("_", "").isalnum():
            raise ValueError("must be the NAME of an environment variable, e.g. OPENAI_API_KEY")
        return value

    @model_validator(mode="after")
    def _url_unless_demo(self):
        if self.kind != "demo" and not self.base_url:
            raise ValueError("base_url: required for a provider of kind " + repr(self.kind))
        return self

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    @property
    def shown_url(self) -> str:
        """base_url for messages and logs: a user:password@ in it is left out."""
        if not self.base_url:
            return ""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return parts._replace(netloc=host).geturl()


# A cache read as a share of the input price, for a model with no
# cached_prompt_price: OpenAI's older models 0.5 (the most they charge), an
# Anthropic cache 0.1. The shortest prompt OpenAI and Anthropic cache: 1,024.


class ModelCacheConfig(Strict):
    """The prompt cache of a model whose provider caches at explicit breakpoints (Anthropic)."""

    # Shorter prefixes are not cached upstream: 1,024 to 4,096 tokens by model.
    min_tokens: int = Field(1024, gt=0)
    # "1h" keeps entries an hour instead of five minutes; writes cost 2x instead of 1.25x.
    ttl: Literal["5m", "1h"] = "5m"

    @property
    def write_multiplier(self) -> float:
        return 2.0 if self.ttl == "1h" else 1.25


class ModelConfig(Strict):
    id: str = Field(min_length=1)
    provider: str
    upstream_model: str | None = None
    tier: str
    context_window: int = Field(gt=0)
    prompt_price: float = Field(0.0, ge=0)
    cached_prompt_price: float | None = Field(None, ge=0)
    completion_price: float = Field(0.0, ge=0)
    capabilities: tuple[Literal["tools", "vision", "json_mode"], ...] = ()
    # false: served only when a request names it, never chosen for the auto model
    routable: bool = True
    # Sent as max_tokens when the client names none (Anthropic requires one).
    default_max_tokens: int | None = Field(None, gt=0)
    cache: ModelCacheConfig | None = None
    # Seconds the provider keeps this model's cached prefix after its last use;
    # None: the cache block's ttl, else the provider kind's default.
    cache_lifetime_seconds: int | None = Field(None, gt=0)

    @property
    def send_as(self) -> str:
        return self.upstream_model or self.id

    def has(self, capability: str) -> bool:
        return capability in self.capabilities


class RoutingConfig(Strict):
    auto_model: str = "auto"
    tiers: tuple[str, ...] = ("easy", "medium", "hard")
    default_tier: str = "medium"
    # What routing's savings count against (a model id); None: the dearest usable.
    baseline_model: str | None = None
    session: SessionRoutingConfig = SessionRoutingConfig()
    background: BackgroundConfig = BackgroundConfig()
    # Bounds on one request (docs/durability.md): every candidate and every try
    # of it share this many seconds until an answer (a stream: its first
    # event); past it the client gets 504. And whether requests are still
    # served when no row can be recorded (database and spool both refusing).
    request_deadline_seconds: float = Field(300.0, gt=0)
    serve_unrecorded: bool = False

    @model_validator(mode="after")
    def _default_in_tiers(self):
        if not self.tiers:
            raise ValueError("tiers must name at least one tier")
        if len(set(self.tiers)) != len(self.tiers):
            raise ValueError("tiers must not repeat")
        if self.default_tier not in self.tiers:
            raise ValueError(f"default_tier {self.default_tier!r} is not one of tiers")
        return self


class HeuristicClassifierConfig(Strict):
    # What the user typed over the whole conversation (estimated tokens; the
    # agent's harness left out, routing/task_text.py) past which a request is
    # at least medium / hard.
    medium_context_tokens: int = Field(8000, gt=0)
    hard_context_tokens: int = Field(60000, gt=0)
    # A last user turn this long (chars) is a real task, not a quick question.
    medium_turn_chars: int = Field(400, gt=0)
    hard_turn_chars: int = Field(4000, gt=0)


class LlmClassifierConfig(Strict):
    model: str
    timeout_seconds: float = Field(3.0, gt=0)


class ClassifierConfig(Strict):
    backend: Literal["heuristic", "llm"] = "heuristic"
    heuristic: HeuristicClassifierConfig = HeuristicClassifierConfig()
    llm: LlmClassifierConfig | None = None

    @model_validator(mode="after")
    def _llm_needs_model(self):
        if self.backend == "llm" and self.llm is None:
            raise ValueError("backend 'llm' needs an llm: {model: ...} block")
        return self


class ObjectiveConfig(Strict):
    assumed_cache_rate: float = Field(0.0, ge=0.0, le=1.0)
    billing_reset_day: int | None = Field(None, ge=1, le=31)


class ResponsesConfig(Strict):
    # How long a response made with store: true can be continued from
    # (previous_response_id) or read back (GET /v1/responses/{id}).
    store_ttl_hours: float = Field(720.0, gt=0)
    # A stored conversation (a chain of previous_response_id) of more bytes
    # than this is not continued (400): the chain is not bounded by the body limit.
    max_chain_bytes: int = Field(64 * 1024 * 1024, gt=0)
    # The stored chains a worker process holds at once for the requests that continue
    # them (bytes as stored; in memory a request takes about four times that).
    # Continuations past it wait their turn (routing/protocols/responses/store.py).
    max_chain_bytes_in_flight: int = Field(64 * 1024 * 1024, gt=0)
    # A built-in (hosted) tool only a Responses upstream runs (web_search, which
    # Codex offers on every request), sent to any other model: "omit" leaves it
    # out and says so (X-Router-Omitted-Tools, the decision's omitted_tools);
    # "refuse" answers 400 naming it unless X-Router-Optional-Tools lists it.
    hosted_tools: Literal["omit", "refuse"] = "omit"


class ForwardingConfig(Strict):
    # What a client's Messages request may make a native Anthropic upstream do
    # on the operator's account (docs/anthropic.md): the client's anthropic-beta
    # flags in this list are forwarded (others dropped, "*" all), and body
    # fields beyond the plain Messages ones (model, messages, system, tools, ...)
    # only when listed here (mcp_servers, container: Anthropic then calls URLs
    # or runs code the client chose).
    anthropic_beta: tuple[str, ...] = (
        "claude-code-20250219",
        "interleaved-thinking-2025-05-14",
        "fine-grained-tool-streaming-2025-05-14",
        "token-efficient-tools-2025-02-19",
        "prompt-caching-2024-07-31",
        "output-128k-2025-02-19",
        "context-management-2025-06-27",
        # Claude Code asked for a model it does not know sends system turns inside messages.
        "mid-conversation-system-2026-04-07",
    )
    anthropic_body_fields: tuple[str, ...] = ("context_management",)


class LimitsConfig(Strict):
    # Per-key budgets and rate limits (set on each key: routing/limits/). How old
    # a key's summed spend may be for the soft budget's warning and the refusal
    # before planning: one aggregate query, re-run at most this often per process
    # (0: every request). The hard budget is reserved per request (routing/limits/ledger.py).
    spend_refresh_seconds: float = Field(5.0, ge=0)


class ExperimentRoutingConfig(Strict):
    """What an arm changes in routing (the auto model's choice); read by routing/selection."""

    # Tiers up (+) or down (-) from the one the classifier chose, within routing.tiers.
    tier_shift: int = 0


class ExperimentConfig(Strict):
    """One arm: a stable share of conversations whose requests run with other settings.

    ``pinch`` holds ``pinch.*`` keys (nested as in the file) applied on top of
    the effective pinch block for the arm's conversations; ``routing`` what the
    arm changes in the auto model's choice. An arm is config, not code.
    """

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$")
    share: float = Field(gt=0.0, le=1.0)
    pinch: dict = {}
    routing: ExperimentRoutingConfig = ExperimentRoutingConfig()


RESERVED_ARMS = ("control", "holdout")


class RouterConfig(Strict):
    providers: dict[str, ProviderConfig]
    models: tuple[ModelConfig, ...]
    routing: RoutingConfig = RoutingConfig()
    forwarding: ForwardingConfig = ForwardingConfig()
    classifier: ClassifierConfig = ClassifierConfig()
    pinch: PinchConfig = PinchConfig()
    objective: ObjectiveConfig = ObjectiveConfig()
    responses: ResponsesConfig = ResponsesConfig()
    local_vision: LocalVisionConfig = LocalVisionConfig()
    limits: LimitsConfig = LimitsConfig()
    # Arms beyond pinch's holdout (routing/experiments.py): each a share of
    # conversations, laid out after pinch.holdout_share in this order.
    experiments: tuple[ExperimentConfig, ...] = ()
    # Client model names (exact, or globs like "claude-haiku-*") -> a model id or
    # the auto model. Claude Code asks for Claude names; this sends its main
    # model to auto and its background model to a cheap tier. An exact alias
    # wins, then a model id or the auto model as named, then globs in the
    # order written.
    aliases: dict[str, str] = {}

    @model_validator(mode="after")
    def _references_resolve(self):
        seen = set()
        for i, model in enumerate(self.models):
            where = f"models.{i}"
            if model.id in seen:
                raise ValueError(f"{where}.id: duplicate model id {model.id!r}")
            seen.add(model.id)
            if model.provider not in self.providers:
                raise ValueError(f"{where}.provider: unknown provider {model.provider!r}")
            if model.tier not in self.routing.tiers:
                raise ValueError(f"{where}.tier: {model.tier!r} is not one of routing.tiers")
        if self.routing.auto_model in seen:
            raise ValueError("routing.auto_model: must not also be a model id")
        for name, target in self.aliases.items():
            if target != self.routing.auto_model and target not in seen:
                raise ValueError(
                    f"aliases.{name}: {target!r} is neither a model id nor "
                    f"{self.routing.auto_model!r}"
                )
            if name in seen or name == self.routing.auto_model:
                raise ValueError(f"aliases.{name}: a model id cannot be an alias")
        baseline = self.routing.baseline_model
        if baseline is not None and baseline not in seen:
            raise ValueError(f"routing.baseline_model: unknown model {baseline!r}")
        if self.classifier.llm is not None and self.classifier.llm.model not in seen:
            raise ValueError(f"classifier.llm.model: unknown model {self.classifier.llm.model!r}")
        self._experiments_valid()
        return self

    def _experiments_valid(self) -> None:
        names = set(RESERVED_ARMS)
        total = self.pinch.holdout_share
        for i, arm in enumerate(self.experiments):
            where = f"experiments.{i}"
            if arm.name in names:
                raise ValueError(f"{where}.name: {arm.name!r} is taken (or reserved)")
            names.add(arm.name)
            total += arm.share
            if "holdout_share" in arm.pinch:
                raise ValueError(f"{where}.pinch.holdout_share: an arm cannot hold out")
            try:
                self.arm_pinch(arm)
            except ValidationError as error:
                raise ValueError(f"{where}.pinch." + describe(error, arm.pinch, dotted)) from None
        if total > 1 + 1e-9:
            raise ValueError(
                f"experiments: pinch.holdout_share and the arms' shares add up to {total:g}, "
                "more than 1"
            )

    def arm_pinch(self, arm: ExperimentConfig) -> PinchConfig:
        """The pinch block for ``arm``'s conversations: its keys over the effective one."""
        if not arm.pinch:
            return self.pinch
        return PinchConfig.model_validate(_deep_merge(self.pinch.model_dump(), arm.pinch))

    def model(self, model_id: str) -> ModelConfig | None:
        return next((m for m in self.models if m.id == model_id), None)

    def resolve_model_name(self, name: str) -> str:
        """The model id or auto model a client's model name stands for (itself if no alias).

        Claude Code marks a model's 1M-token context as ``[1m]`` after its name
        (``claude-opus-4-8[1m]``): a name with such a suffix stands for what the
        name without it does.
        """
        for asked in dict.fromkeys((name, name.split("[", 1)[0])):
            target = self.aliases.get(asked)
            if target is not None:
                return target
            if asked == self.routing.auto_model or self.model(asked) is not None:
                return asked
        for pattern, target in self.aliases.items():
            if fnmatchcase(name, pattern):
                return target
        return name

    def cache_prices(self, model: ModelConfig) -> CacheModel:
        """How ``model``'s prompt cache bills and how long it lasts (routing.config.cache)."""
        return cache_model(model, KIND_CACHE[self.providers[model.provider].kind])


def _deep_merge(base: dict, changes: dict) -> dict:
    merged = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def validate_config(data: dict) -> RouterConfig:
    """Validate raw config data; raise ConfigError naming each bad key."""
    if not isinstance(data, dict):
        raise ConfigError("the config must be a mapping at the top level")
    try:
        return RouterConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(describe(error, data, dotted, known_keys(RouterConfig))) from None
