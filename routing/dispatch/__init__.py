"""The upstream call, split by job: ``attempts`` (retries, fallback, backoff), ``failures``
(what the client is told when every try failed), ``relay`` (the answer, plain or streamed, and
its row), ``outcome`` (what the row records). What differs per client protocol is its ``Wire``
(routing.protocols.base); none of this knows which protocol it serves.
"""
