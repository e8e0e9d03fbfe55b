"""Figures kept as they are written: small tables of what the surfaces show.

Every surface (/metrics, the dashboard, the admin snapshot, pinch_summary, the
key budgets) used to sum the decision log over its window: at 100,000 rows a
day that is seconds per read, and it grows with the traffic. These tables are
added to in the transaction that inserts each decision row, so a surface reads
a few hundred rows whatever the traffic.

``routing/models/summaries.py`` declares them (beside this package: routing.models
imports them, and this package imports routing.models); ``contributions`` turns
one decision row into what it adds (the one home of each figure, used both
when recording and when recomputing from the log); ``units`` keeps the
figures of a conversation and of each task of it (the quality block's samples,
the conversations cheaper or dearer), each counted once in the hour of its
latest decision; ``writes`` inserts decisions with their contributions and
rebuilds the tables from the log (``manage.py rebuild_summaries``); ``purge``
deletes old decisions in batches and keeps the tables true. docs/summaries.md tells
the whole design.
"""
