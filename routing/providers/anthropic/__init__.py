"""The Anthropic provider: Claude models, spoken to in the Messages API.

``client.AnthropicProvider`` is the provider. For a chat-completions body it
translates (``request.to_messages_request``), marks the stable prefix for
the prompt cache (``cache.place_breakpoints``) and turns the answer back
(``response.to_chat_completion``, ``stream.chat_chunks``); ``errors`` maps
Anthropic's errors into the OpenAI shape. A request that came in on
/v1/messages goes out as the client wrote it (``messages``,
``messages_stream``, ``count_tokens``): only breakpoints are added, nothing
is translated. The shapes both directions share (stop reasons, usage,
thinking blocks) are in routing.protocols.messages.shapes. What is not
translated yet is listed in docs/anthropic.md.
"""
