"""Which tier an ``auto`` request belongs to.

The embedded heuristic needs no server and costs microseconds: it reads the
size of the conversation and of the last user turn, and a few signs of hard
work (code, stack traces, design words). An optional LLM classifier asks a
configured model for one tier word; any error, timeout or odd answer falls
back to the heuristic, so classification never fails a request.

The classifier sees the FULL, unpruned messages: pinch runs after it.
"""

import logging
import re
from dataclasses import dataclass

from pinch import estimate_tokens, extract_text, last_user_text
from routing.config import RouterConfig
from routing.errors import ProviderError
from routing.providers import provider_for

log = logging.getLogger(__name__)

# Words that signal a task needing a strong model, matched on the last user turn.
HARD_WORDS = re.compile(
    r"\b(architect\w*|refactor\w*|prove|proof|race condition|deadlock|concurren\w+|"
    r"optimi[sz]\w*|security|vulnerab\w+|migrat\w+|design|algorithm\w*|debug\w*)\b",
    re.IGNORECASE,
)
# Code or a stack trace in the turn: at least a medium model.
CODE_SIGNS = re.compile(r"```|Traceback \(most recent call last\)|^\s*(def|class|fn|func) ", re.M)

LLM_PROMPT = (
    "Classify how capable a model must be to answer the user's last request well. "
    "Answer with exactly one word from: {tiers}."
)


@dataclass(frozen=True)
class Classification:
    tier: str
    outcome: str  # heuristic | llm | llm_fallback


def _tier_at(tiers, level: int) -> str:
    """Level 0/1/2 (easy/medium/hard) onto however many tiers are configured."""
    if len(tiers) == 1:
        return tiers[0]
    return tiers[round(level * (len(tiers) - 1) / 2)]


def heuristic_tier(messages, tools, config: RouterConfig) -> str:
    rules = config.classifier.heuristic
    turn = last_user_text(messages)
    context = sum(estimate_tokens(extract_text(m)) for m in messages)
    level = 0
    if context >= rules.medium_context_tokens or len(turn) >= rules.medium_turn_chars:
        level = 1
    if tools or CODE_SIGNS.search(turn) or any(m.get("role") == "tool" for m in messages):
        level = max(level, 1)
    big = context >= rules.hard_context_tokens or len(turn) >= rules.hard_turn_chars
    if big or (level >= 1 and HARD_WORDS.search(turn)):
        level = 2
    return _tier_at(config.routing.tiers, level)


def _llm_tier(messages, config: RouterConfig) -> str | None:
    llm = config.classifier.llm
    model = config.model(llm.model)
    provider = provider_for(model.provider, config.providers[model.provider])
    tiers = config.routing.tiers
    body = {
        "model": model.send_as,
        "messages": [
            {"role": "system", "content": LLM_PROMPT.format(tiers=", ".join(tiers))},
            {"role": "user", "content": last_user_text(messages)[:4000]},
        ],
        "max_tokens": 5,
        "temperature": 0,
    }
    answer = provider.chat(body, timeout=llm.timeout_seconds)
    text = (answer["choices"][0].get("message") or {}).get("content") or ""
    for word in re.findall(r"[A-Za-z_-]+", text.lower()):
        if word in tiers:
            return word
    return None


def classify(messages, tools, config: RouterConfig) -> Classification:
    if config.classifier.backend == "llm":
        try:
            tier = _llm_tier(messages, config)
        except (ProviderError, KeyError, IndexError, TypeError, AttributeError) as error:
            log.warning(
                "classifier_fallback reason=%s", getattr(error, "message", type(error).__name__)
            )
            tier = None
        if tier is not None:
            return Classification(tier, "llm")
        return Classification(heuristic_tier(messages, tools, config), "llm_fallback")
    return Classification(heuristic_tier(messages, tools, config), "heuristic")
