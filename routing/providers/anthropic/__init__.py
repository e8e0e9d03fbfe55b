"""The Anthropic Messages API <-> chat completions.

``request.to_messages_request`` turns a chat-completions body into a Messages
body; ``cache.place_breakpoints`` marks its stable prefix for the prompt
cache; ``response.to_chat_completion`` and ``stream.chat_chunks`` turn the
answer back; ``errors`` maps Anthropic's error types and statuses.
What is not translated yet is listed in docs/anthropic.md.
"""
