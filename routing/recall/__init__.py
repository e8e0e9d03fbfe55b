"""Recall: what pinch trims stays one tool call away.

Every tool result pinch trims or replaces keeps its original text, under a
short handle named in the text sent in its place (``store``). The router
serves one tool of its own, ``router_recall``, on every request of a
conversation pinch is on for; when the model calls it, the router answers
the call itself and asks the upstream again, so the client never sees it.
docs/pinch.md, "Recall", has the contract and the figures.
"""

TOOL_NAME = "router_recall"
