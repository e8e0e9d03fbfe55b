"""The scripted model for the real Claude Code (tests/support/agent_upstream.py), recalling.

It plays Claude Code's task as the agent upstream does, except that once it
sees a tool result pinch trimmed it calls ``router_recall`` for the vault
line and then answers with it (tests/support/recall_upstream.py), on either
upstream protocol.
"""

import json

from tests.support import recall_upstream
from tests.support.agent_upstream import (
    AgentAnthropicHandler,
    AgentAnthropicServer,
    AgentOpenAIHandler,
    AgentOpenAIServer,
)
from tests.support.anthropic_upstream import SIGNATURE

MODEL = "recall-agent"


class RecallAgentAnthropicHandler(AgentAnthropicHandler):
    def _content(self, body):
        step = recall_upstream.step(recall_upstream.messages_seen(body), MODEL)
        if step is None:
            return super()._content(body)
        # Asked to think (Claude Code asks), a turn starts with a signed thinking block.
        thought = (
            [{"type": "thinking", "thinking": "Recall it.", "signature": SIGNATURE}]
            if body.get("thinking", {}).get("type") not in (None, "disabled")
            else []
        )
        if "text" in step:
            return [*thought, {"type": "text", "text": step["text"]}], "end_turn"
        arguments = recall_upstream.recall_arguments(step["recall"])
        call = {"type": "tool_use", "id": f"toolu_recall_{len(self.server.received)}"}
        call.update(name=recall_upstream.RECALL_TOOL, input=arguments)
        return [*thought, call], "tool_use"


class RecallAgentOpenAIHandler(AgentOpenAIHandler):
    def _recall(self, body):
        return recall_upstream.step(recall_upstream.chat_seen(body), MODEL)

    def _tool_calls(self, body) -> list:
        step = self._recall(body)
        if step is None:
            return super()._tool_calls(body)
        if "text" in step:
            return []
        arguments = json.dumps(recall_upstream.recall_arguments(step["recall"]))
        function = {"name": recall_upstream.RECALL_TOOL, "arguments": arguments}
        return [
            {
                "id": f"call_recall_{len(self.server.received)}",
                "type": "function",
                "function": function,
            }
        ]

    def _text(self, body) -> str:
        step = self._recall(body)
        return step["text"] if step and "text" in step else super()._text(body)


class RecallAgentAnthropicServer(AgentAnthropicServer):
    def __init__(self, repo: str):
        super().__init__(repo)
        self.RequestHandlerClass = RecallAgentAnthropicHandler


class RecallAgentOpenAIServer(AgentOpenAIServer):
    def __init__(self, repo: str):
        super().__init__(repo)
        self.RequestHandlerClass = RecallAgentOpenAIHandler
