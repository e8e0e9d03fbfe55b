"""Background work told apart by its prompt, and the fast first passes that must not hide one.

Both the background prompts and the classifier's hard words are searched with
a lookahead of the letters they can start with (routing/background.py,
routing/classifier.py): a word or prompt added later with another first
letter would silently never match. Before either search, a substring test of
the case-folded text skips texts holding none of the words every prompt or hard
word holds (routing.task_text.may_hold): a word added to a pattern and not to
its cues would be skipped too. The properties below compare each fast pass
with the plain pattern on text built from the real phrases, with the letters
``re.IGNORECASE`` takes for ASCII ones (long s, Kelvin sign, Turkish I).
"""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing import background
from routing.background import background_kind
from routing.classifier import HARD_STEMS, HARD_WORDS, holds_code
from routing.config import validate_config
from routing.task_text import may_hold
from tests.support.config import base_config

CONFIG = validate_config(base_config("http://127.0.0.1:9/v1"))
TOOLS = [{"type": "function", "function": {"name": "bash"}}]

PROMPTS = [
    ("Your task is to create a detailed summary of the conversation so far.", "compaction"),
    ("You are performing a CONTEXT CHECKPOINT COMPACTION. Write it down.", "compaction"),
    ("Please write a short memento message for the next agent.", "compaction"),
    ("Generate a concise, sentence-case title (3-7 words) for this coding session.", "title"),
    ("Give a 3-5 word title for the chat.", "title"),
    ("Extract a 2-3 word title from the request.", "title"),
    ("Summarize this conversation in two lines.", "summary"),
    ("Write a summary of the conversation in one paragraph.", "summary"),
    ("Fix the failing test in utils.py and run the suite again.", ""),
]


@pytest.mark.parametrize(("prompt", "kind"), PROMPTS)
def test_a_background_prompt_is_told_apart_in_the_system_prompt_or_the_last_user_turn(prompt, kind):
    as_system = [{"role": "system", "content": prompt}, {"role": "user", "content": "go"}]
    as_user = [{"role": "system", "content": "agent"}, {"role": "user", "content": prompt}]
    for messages in (as_system, as_user):
        # Tools and a large prompt: not "short", so only the prompt can make it background.
        assert background_kind("auto", messages, TOOLS, 50_000, CONFIG) == kind


FRAGMENTS = [prompt for prompt, _ in PROMPTS] + [
    "refactor",
    "Architecture",
    "race condition",
    "DEBUGGING",
    "migrations",
    "proof",
    "optimise",
    "vulnerable",
    "12-15 words title",
    "\u0663-\u0665 word title",  # Arabic-Indic digits are digits to \d
    "\u017fummari\u017fe the conversation",  # long s: an s to re.IGNORECASE
    "a 3-5 word t\u0131tle",  # dotless i: an i to re.IGNORECASE, not to casefold
    "T\u0130TLE",
    "DEADLOC\u212a",  # Kelvin sign
    "def main():",
    "```py",
    "Traceback (most recent call last):",
]
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=8).map(
    " ".join
)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_the_first_pass_finds_every_background_prompt_the_patterns_find(text):
    found = any(pattern.search(text) for _, pattern in background._PROMPTS)
    assert bool(background._ANY_PROMPT.search(text)) == found


PLAIN_HARD_WORDS = re.compile(HARD_WORDS.pattern.replace(r"(?=[acdmoprsv])", ""), re.IGNORECASE)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_the_hard_words_lookahead_finds_what_the_plain_pattern_finds(text):
    assert PLAIN_HARD_WORDS.pattern != HARD_WORDS.pattern
    assert HARD_WORDS.findall(text) == PLAIN_HARD_WORDS.findall(text)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_the_cues_skip_no_text_a_background_prompt_or_hard_word_is_in(text):
    if any(pattern.search(text) for _, pattern in background._PROMPTS):
        assert may_hold(text, background._CUES)
    if PLAIN_HARD_WORDS.search(text):
        assert may_hold(text, HARD_STEMS)


# The classifier's code signs as one pattern, searched in the whole turn.
PLAIN_CODE_SIGNS = re.compile(
    r"```|Traceback \(most recent call last\)|^\s*(def|class|fn|func) ", re.M
)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_the_code_signs_substring_tests_find_what_the_plain_pattern_finds(text):
    assert holds_code(text) == bool(PLAIN_CODE_SIGNS.search(text))
