"""Ports for tests, without the bind-close-reuse race.

A port found by binding and closing a socket can be taken by anyone before the
test uses it. ``refused_port`` keeps its socket bound but not listening, so
connecting to it is refused for as long as the test runs, and nobody else can
take it.
"""

import contextlib
import socket


@contextlib.contextmanager
def refused_port():
    """Yield a loopback port where a connection is refused (bound, never listening)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@contextlib.contextmanager
def listening_socket():
    """Yield a listening loopback socket to hand to a server process (``fd://N``).

    The test keeps the port from the moment it is chosen until the server owns
    it: pass ``sock.fileno()`` in the child's ``pass_fds``.
    """
    with socket.create_server(("127.0.0.1", 0)) as sock:
        sock.set_inheritable(True)
        yield sock
