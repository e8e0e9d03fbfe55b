"""The OpenAI Responses API (Codex CLI, the openai-agents SDK) <-> chat completions.

``inbound.from_responses_request`` turns a Responses body (its ``input``
items, after any stored history) into the chat-completions body the pipeline
plans on, and keeps the client's items in a ``ResponsesSource``;
``inbound.native_body`` gives those items back, with pinch's changes mapped
onto their ``function_call_output`` items, for an upstream that speaks the
Responses API itself; ``reply`` turns a chat completion and a chunk stream
into a ``response`` object and the Responses event stream. What is not
translated yet is listed in docs/responses.md.
"""
