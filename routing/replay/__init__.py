"""The replay tooling: recorded agent sessions planned through the router, never sent.

Off the request path. ``corpus`` loads sessions (the corpus format, or an
agent's own logs through ``transcripts``); ``sessions`` plans each request of
them through ``routing.pipeline.plan_request`` into ``totals``; ``prices`` bills
the result under a prompt cache; ``recalls`` counts what a recall of what pinch
took out brings back, and prices it; ``quality`` reads what the agent did next; ``routes``
runs the routing arms side by side. ``manage.py pinch_replay`` and
``routing_replay`` (metrics/) turn it into reports.
"""
