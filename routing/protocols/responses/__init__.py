"""The OpenAI Responses API (POST /v1/responses and the stored responses), for Codex CLI.

``request`` checks a body against its one schema (once) and parses it into
the planned request, after the stored history a ``previous_response_id``
names; ``inbound`` translates its ``input`` items to chat completions,
keeping the client's items in a ``ResponsesSource`` (``native`` gives them
back with pinch's changes mapped onto their ``function_call_output`` items
for an upstream that speaks the Responses API itself, ``native_body``); ``reply``
turns a chat completion and a chunk stream into a ``response`` and the
Responses event stream; ``wire`` is what the dispatcher calls, picking
``native`` (a Responses upstream, nothing translated) or ``translated`` (a
chat one); ``shapes`` the ids, usage and items both share; ``errors`` its error
events; ``store`` the kept responses. What is not translated yet is listed
in docs/responses.md.
"""
