"""A test that cannot run here skips on a developer's machine and fails under CI=true.

A skip is a gap in what was checked: CI, which is meant to check everything,
must say so loudly rather than pass without it.
"""

import os

import pytest


def missing(what: str):
    """Skip (fail under CI) because ``what`` is not available."""
    if os.environ.get("CI"):
        pytest.fail(f"CI needs {what}")
    pytest.skip(f"{what} is not available")
