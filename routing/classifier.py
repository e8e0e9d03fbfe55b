"""Which tier an ``auto`` request belongs to.

Both classifiers read the task, not the payload: what the user typed for the
current task and over the conversation (routing.task_text), never the agent's
harness (reminder blocks, system prompt, tool definitions, tool output),
which is the same for a trivial and a hard task. The embedded heuristic needs
no server and costs microseconds: the length of the task and of everything
the user typed, and a few signs of hard work (code, stack traces, design
words). An optional LLM classifier asks a configured model for one tier word
about the same text; any error, timeout or odd answer falls back to the
heuristic, so classification never fails a request.

The classifier sees the FULL, unpruned messages: pinch runs after it.
"""

import logging
import re
from dataclasses import dataclass

from pinch import CHARS_PER_TOKEN
from routing.config import RouterConfig
from routing.errors import ProviderError
from routing.providers import provider_for
from routing.task_text import may_hold, task_text, typed_chars

log = logging.getLogger(__name__)

# Words that signal a task needing a strong model, matched on the user's task.
# The lookahead holds the words' first letters: without it every position of
# the turn tries all the words (measured on a 2 KB task: 182 us, 74 with it).
HARD_WORDS = re.compile(
    r"\b(?=[acdmoprsv])(architect\w*|refactor\w*|prove|proof|race condition|deadlock|concurren\w+|"
    r"optimi[sz]\w*|security|vulnerab\w+|migrat\w+|design|algorithm\w*|debug\w*)\b",
    re.IGNORECASE,
)
# What each hard word begins with: a turn with none of them (most) is not searched for
# them (routing.task_text.may_hold).
HARD_STEMS = (
    "architect",
    "refactor",
    "prove",
    "proof",
    "race condition",
    "deadlock",
    "concurren",
    "optimi",
    "security",
    "vulnerab",
    "migrat",
    "design",
    "algorithm",
    "debug",
)
# Code or a stack trace in the turn: at least a medium model. A fence or a traceback is a
# plain substring; only a definition's line needs a pattern, and its ``^`` under ``re.M``
# is tried at every position of the turn (one pattern for all three took 18 us on a 2 KB
# turn holding a fence, the substring tests under 1 us).
CODE_MARKS = ("```", "Traceback (most recent call last)")
DEFINITION = re.compile(r"^\s*(def|class|fn|func) ", re.M)
# What a definition's line holds (the search is case-sensitive): a turn without any is not searched.
DEFINITION_CUES = ("def ", "class ", "fn ", "func ")

# Turns whose signs are remembered (``_signs``), per process: at most 512 turns of 16,000
# characters (8 MB of ASCII text); a longer turn is searched each time.
SIGNS_KEPT = 512
SIGNS_MAX_CHARS = 16_000
_signs_of: dict[str, tuple[bool, int]] = {}

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


def heuristic_tier(messages, tools, config: RouterConfig, facts=None) -> str:
    """The tier of the task the user typed; ``tools`` are the harness's and do not count.

    Easy unless: the task is long or holds code (medium); it names hard work
    (medium, hard when it is also long, holds code or names two kinds of it);
    it is very long, or the user has typed a lot over the conversation (by
    the context thresholds, in estimated tokens). ``facts``: the MessageFacts of
    ``messages`` (pinch.carry), whose typed texts are carried (routing.task_text).
    """
    rules = config.classifier.heuristic
    turn = task_text(messages, facts)
    typed = typed_chars(messages, facts) // CHARS_PER_TOKEN
    level = 0
    if typed >= rules.medium_context_tokens or len(turn) >= rules.medium_turn_chars:
        level = 1
    code, kinds = _signs(turn)
    if code:
        level = max(level, 1)
    if kinds:
        level = 2 if level >= 1 or kinds >= 2 else 1
    if typed >= rules.hard_context_tokens or len(turn) >= rules.hard_turn_chars:
        level = 2
    return _tier_at(config.routing.tiers, level)


def _signs(turn: str) -> tuple[bool, int]:
    """(code in the turn, how many kinds of hard work it names), remembered per turn: an
    agent's requests repeat the task's turn until the user types again, and its searches
    took ~20 us of a 2 KB turn (the memo's lookup, under 1)."""
    signs = _signs_of.get(turn)
    if signs is None:
        found = HARD_WORDS.findall(turn) if may_hold(turn, HARD_STEMS) else ()
        signs = (holds_code(turn), len({word.lower()[:5] for word in found}))
        if len(turn) <= SIGNS_MAX_CHARS:
            if len(_signs_of) >= SIGNS_KEPT:
                _signs_of.clear()  # the tasks in hand come back at once
            _signs_of[turn] = signs
    return signs


def holds_code(turn: str) -> bool:
    """A code fence, a traceback or a line defining a function or class in the user's turn."""
    if any(mark in turn for mark in CODE_MARKS):
        return True
    return any(cue in turn for cue in DEFINITION_CUES) and DEFINITION.search(turn) is not None


def _llm_tier(messages, config: RouterConfig) -> str | None:
    llm = config.classifier.llm
    model = config.model(llm.model)
    provider = provider_for(model.provider, config.providers[model.provider])
    tiers = config.routing.tiers
    body = {
        "model": model.send_as,
        "messages": [
            {"role": "system", "content": LLM_PROMPT.format(tiers=", ".join(tiers))},
            {"role": "user", "content": task_text(messages)[:4000]},
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


def classify(messages, tools, config: RouterConfig, facts=None) -> Classification:
    """The task's tier; ``facts``: as ``heuristic_tier``'s."""
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
        return Classification(heuristic_tier(messages, tools, config, facts), "llm_fallback")
    return Classification(heuristic_tier(messages, tools, config, facts), "heuristic")
