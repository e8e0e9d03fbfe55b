"""A test certificate authority and a server certificate it signed, for TLS upstreams.

Made once with openssl (valid to 2126): a CA (``certs/ca.pem``, its key not
kept) and a certificate for IP 127.0.0.1 only (``certs/server.pem``,
``certs/server.key``). No CA in certifi's bundle vouches for them, so the
router must refuse them unless a test puts ``CA_FILE`` in the bundle's place.
"""

import ssl
from pathlib import Path

CERTS = Path(__file__).parent / "certs"
CA_FILE = str(CERTS / "ca.pem")


def server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERTS / "server.pem", CERTS / "server.key")
    return context
