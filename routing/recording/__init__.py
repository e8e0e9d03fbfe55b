"""The decision write path, in one package: a request that reached an upstream ends with one row.

``decisions`` builds and writes the row, ``ids`` hands out its id before the
write, routing.db_writes bounds how long a request waits for the database,
``spool`` keeps a row the database refused and drains it exactly once, and
``journal`` covers a worker that dies mid-answer. docs/durability.md tells the
whole path.
"""
