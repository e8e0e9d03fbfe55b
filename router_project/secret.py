"""A per-installation secret key, made once and kept in the data directory.

Used only when DJANGO_SECRET_KEY is unset, so the embedded defaults run with no
set-up yet never share a key with another installation.
"""

import os
import secrets
from pathlib import Path


def load_or_create_secret_key(data_dir: Path) -> str:
    path = Path(data_dir) / "secret_key"
    try:
        key = path.read_text().strip()
        if key:
            return key
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    tmp = path.with_suffix(".tmp")
    # Write beside and rename: two workers starting together never read half a key.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key)
    os.replace(tmp, path)
    return path.read_text().strip()
