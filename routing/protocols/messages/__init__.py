"""The Anthropic Messages API (POST /v1/messages, count_tokens), for Claude Code.

``request`` checks a body against its one schema and parses it into the
planned request, ``inbound`` translates it to chat completions, ``reply``
turns a chat answer and its chunks into a Message and Messages events,
``wire`` is what the dispatcher calls, picking ``native`` (a Claude upstream,
nothing translated: the client's own body with pinch's changes mapped back,
``native_request``) or ``translated`` (the rest), ``errors`` Anthropic's
error shape and its one table of types and statuses, ``shapes`` what both
directions share (stop reasons, usage, thinking blocks). What is not
translated yet is listed in docs/anthropic.md.
"""
