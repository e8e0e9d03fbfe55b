"""OpenAI chat completions (POST /v1/chat/completions): the router's own protocol.

``request`` checks the body against one strict schema, ``inbound`` makes it
the planned request (nothing to translate), ``reply`` reads the answer and
its chunks, ``wire`` is what the dispatcher calls, ``errors`` OpenAI's error
shape, which the Responses API shares.
"""
