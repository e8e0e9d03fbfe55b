"""A scripted model for the real Claude Code: it answers with tool calls, then with a final answer.

Claude Code only does something when the model asks for tools, so this
upstream plays the model: each request of the main agent (the one offered
Claude Code's ``Read``, ``Bash`` and ``Write`` tools) gets the next step of
``STEPS``, counted by the tool results already in the conversation; every
other request (background work on the small model) gets a short text. It
speaks both protocols, on top of the test servers: ``AgentAnthropicServer``
(the Anthropic test server's checks included) and ``AgentOpenAIServer``.

``server.repo`` is the scratch repository Claude Code runs in: the tools
need absolute paths.

Compaction: a request whose last turn asks for a summary of the
conversation (Claude Code's ``/compact`` prompt) gets ``SUMMARY``; a
conversation that carries it (Claude Code goes on from the summary, the tool
results gone) plays ``after_compaction``: one ``Bash`` call, then
``FOLLOW_UP_ANSWER``.
"""

import json

from tests.support.anthropic_upstream import SIGNATURE, AnthropicHandler, AnthropicServer
from tests.support.compaction import SUMMARY, SUMMARY_MARKER, is_compaction
from tests.support.openai_upstream import UpstreamHandler, UpstreamServer

FINAL_ANSWER = "Done: the check script printed CHECK-OK and ANSWER.md holds the summary."
BACKGROUND_ANSWER = "ok"
FOLLOW_UP_ANSWER = "Continued from the summary: ANSWER.md says the check passes."


def steps(repo: str) -> list[list[tuple[str, dict]]]:
    """The tool calls of each turn: two reads at once, then a command, then a write."""
    return [
        [
            ("Read", {"file_path": f"{repo}/README.md"}),
            ("Read", {"file_path": f"{repo}/check.py"}),
        ],
        [("Bash", {"command": "python3 check.py", "description": "Run the check script"})],
        [("Write", {"file_path": f"{repo}/ANSWER.md", "content": "The check passes.\n"})],
    ]


def after_compaction(repo: str) -> list[list[tuple[str, dict]]]:
    return [[("Bash", {"command": f"cat {repo}/ANSWER.md", "description": "Read the answer"})]]


def next_step(repo: str, tool_names: set, results_so_far: int, messages=()):
    """The calls to make now, None for the final answer, "summary" for a compaction request,
    "background" off the main agent."""
    if is_compaction(messages):
        return "summary"
    text = json.dumps(messages)
    if not {"Read", "Bash", "Write"} <= tool_names:
        return "background"
    script = after_compaction(repo) if SUMMARY_MARKER in text else steps(repo)
    done = 0
    for turn, calls in enumerate(script):
        done += len(calls)
        if results_so_far < done:
            return script[turn]
    return None


def _text_of(step, body) -> str:
    """The text answer of a step that calls no tool."""
    if step == "summary":
        return SUMMARY
    if step == "background":
        return BACKGROUND_ANSWER
    return FOLLOW_UP_ANSWER if SUMMARY_MARKER in json.dumps(body["messages"]) else FINAL_ANSWER


class AgentAnthropicHandler(AnthropicHandler):
    def _content(self, body):
        names = {t.get("name") for t in body.get("tools") or ()}
        results = sum(
            1
            for turn in body["messages"]
            if isinstance(turn["content"], list)
            for block in turn["content"]
            if block.get("type") == "tool_result"
        )
        step = next_step(self.server.repo, names, results, body["messages"])
        # Asked to think (Claude Code asks), the turn starts with a signed thinking block,
        # which Claude Code must send back as it got it.
        thought = (
            [{"type": "thinking", "thinking": "Next step.", "signature": SIGNATURE}]
            if body.get("thinking", {}).get("type") not in (None, "disabled")
            else []
        )
        if not isinstance(step, list):
            return [*thought, {"type": "text", "text": _text_of(step, body)}], "end_turn"
        blocks = [*thought, {"type": "text", "text": "Working on it."}]
        for k, (name, tool_input) in enumerate(step):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{results:02d}_{k}",
                    "name": name,
                    "input": tool_input,
                }
            )
        return blocks, "tool_use"


class AgentOpenAIHandler(UpstreamHandler):
    def _step(self, body):
        names = {t.get("function", {}).get("name") for t in body.get("tools") or ()}
        results = sum(1 for m in body.get("messages") or () if m.get("role") == "tool")
        return next_step(self.server.repo, names, results, body.get("messages") or []), results

    def _tool_calls(self, body) -> list:
        step, results = self._step(body)
        if not isinstance(step, list):
            return []
        return [
            {
                "id": f"call_{results:02d}_{k}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(tool_input)},
            }
            for k, (name, tool_input) in enumerate(step)
        ]

    def _text(self, body) -> str:
        step, _ = self._step(body)
        return _text_of(step, body)


class AgentAnthropicServer(AnthropicServer):
    def __init__(self, repo: str, address=("127.0.0.1", 0)):
        super().__init__(address, handler=AgentAnthropicHandler)
        self.repo = repo


class AgentOpenAIServer(UpstreamServer):
    def __init__(self, repo: str, address=("127.0.0.1", 0)):
        super().__init__(address, handler=AgentOpenAIHandler)
        self.repo = repo
