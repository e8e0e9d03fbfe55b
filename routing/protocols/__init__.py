"""The client protocols the router serves, one package each, each of the same modules.

``chat`` (OpenAI chat completions), ``messages`` (the Anthropic Messages
API), ``responses`` (the OpenAI Responses API). Each has ``request`` (the
body's one schema and parse), ``inbound`` (the client's body to the planned
request, ``canonical.ChatRequest``), ``reply`` (the answer and its events
back to the client, plain and streamed), ``wire`` (what the dispatcher calls
for it, and its ``ClientProtocol``, which the endpoint view is given) and
``errors`` (its error shape). The two that a provider may speak natively or
be translated to (``messages``, ``responses``) split their wire's two paths:
``native`` (nothing translated; it imports no translator) and
``translated``. ``base`` holds what they fill in and share:
``ClientProtocol``, ``Wire``, the one SSE parser, the SSE writers;
``chunks`` reads a chat chunk stream for the two protocols that translate
one. Nothing here imports a provider: the wires are handed theirs.
"""
