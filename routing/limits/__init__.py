"""Per-key budgets and rate limits: what a key may spend and how fast it may call.

``admission`` is the one entry of the request path (the views call it);
``budgets`` sums a key's spend in its period, ``ledger`` reserves each
request's worst case on the key's hard budget before its upstream call and
settles it with its row, ``rate`` holds the per-minute buckets (Redis across
instances, process memory alone), ``refusals`` is the error each client
protocol gets and the count /metrics reads, and ``settings`` is the one
service that changes a key's limits (admin and the management commands call it).
"""
