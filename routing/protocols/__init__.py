"""Wire protocols other than chat completions, translated to and from it.

One package per protocol, each of the same small modules: ``request``
(a chat-completions request into the protocol's), ``response`` (its answer
into a chat completion), ``stream`` (its events into chat-completions
chunks), ``errors`` (its error shapes and statuses). The modules are pure:
no HTTP, no Django, no config objects; providers (routing.providers) and,
later, inbound adapters call them.
"""
