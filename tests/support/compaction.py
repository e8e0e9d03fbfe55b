"""What a scripted upstream answers to an agent's compaction request, and how it knows one.

Claude Code's ``/compact`` and Codex's auto-compaction are ordinary requests
whose last user message asks for a summary of the conversation; the agent
then goes on from the summary, the old turns gone. A scripted upstream
answers such a request with ``SUMMARY`` and, in a conversation that carries
``SUMMARY_MARKER`` (the agent went on from it), plays the script meant for
after the compaction.
"""

import json

# What the agents' compaction prompts say (Claude Code 2.1.197, Codex CLI 0.171).
COMPACTION_PROMPTS = (
    "create a detailed summary of the conversation so far",
    "CONTEXT CHECKPOINT COMPACTION",
)
SUMMARY_MARKER = "COMPACT-SUMMARY-7f3a"
SUMMARY = (
    "<analysis>The user asked for a check; it ran.</analysis>\n<summary>"
    f"{SUMMARY_MARKER}: the files were read and checked, the answer was written.</summary>"
)


def last_turn(messages) -> str:
    """The last message of a conversation (chat messages or Responses items), as JSON."""
    return json.dumps(messages[-1]) if messages else ""


def is_compaction(messages) -> bool:
    text = last_turn(messages)
    return any(prompt in text for prompt in COMPACTION_PROMPTS)


def after_compaction(messages) -> bool:
    return SUMMARY_MARKER in json.dumps(messages)
