"""The shared corpus' recorded sessions as pytest parameters, for tests that replay them."""

import pytest

from routing.replay.corpus import corpus_dir, load_sessions


def recorded_sessions() -> list:
    """One parameter per recorded session; a lone None when the corpus is absent (the test
    then says so through tests.support.ci.missing)."""
    folder = corpus_dir()
    if not folder.is_dir():
        return [pytest.param(None, id="no-corpus")]
    return [pytest.param(s, id=s.name) for s in load_sessions([folder])]
