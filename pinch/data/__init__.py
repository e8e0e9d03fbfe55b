"""Data files of the builtin embedder (a package only so that wheels carry them).

static_*: a token-embedding table distilled from all-MiniLM-L6-v2 (Apache-2.0;
see NOTICE and LICENSE-all-MiniLM-L6-v2 here), built by
scripts/build_static_embeddings.py and read by pinch/embedders/builtin.py.
"""
