"""A throwaway PostgreSQL database for tests that serve the router in other processes.

pytest-django's test database belongs to the test process; routers served by
gunicorn need a database of their own that several of them can share.
"""

from __future__ import annotations

import contextlib
import os
import uuid

import pytest

SERVER = os.environ.get("TEST_POSTGRES_SERVER", "postgres://postgres@127.0.0.1:5432")


@contextlib.contextmanager
def scratch_database(template: str = "template1"):
    """Yield the DATABASE_URL of a new database, a copy of ``template`` (by default empty);
    dropped afterwards."""
    import psycopg

    name = f"router_scratch_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(f"{SERVER}/postgres", autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as error:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs PostgreSQL at {SERVER}: {error}")
        pytest.skip(f"no PostgreSQL at {SERVER}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        try:
            yield f"{SERVER}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
