"""An embedder for any OpenAI-compatible ``/v1/embeddings`` endpoint.

For operators who run an embedding model already (Ollama's
``nomic-embed-text`` at ``http://localhost:11434/v1`` is the documented
example; OpenAI, vLLM and llama.cpp's server speak the same protocol). The
whole batch — the request and every candidate — goes in one POST, because a
round trip per candidate would cost more than the pruning saves.

Nothing here trusts the answer. A non-200 status, a timeout, a refused
connection, a body that is not JSON, a ``data`` list of the wrong length or
with duplicate or missing ``index`` values, a vector that is not a list of
finite numbers, vectors of different widths: each is an ``EmbeddingError``
whose message names the problem and never the API key. Rows are put back in
input order by their ``index`` field, which the protocol allows a server to
return out of order.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from urllib.parse import urlsplit

import numpy as np
import requests

from pinch.embedders.base import Embedder, EmbeddingError, stack_vectors, vector_to_bytes

# How much of an error body goes into the message: enough for "model not
# found", short enough that a log line stays a line.
_ERROR_BODY_CHARS = 200


class OpenAIEmbedder(Embedder):
    """One batched POST to ``{base_url}/embeddings`` per ``featurize`` call."""

    @classmethod
    def from_settings(cls, settings) -> OpenAIEmbedder:
        return cls(
            base_url=settings.base_url,
            model=settings.model,
            api_key_env=settings.api_key_env,
            timeout_seconds=settings.timeout_seconds,
        )

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        timeout_seconds: float = 10.0,
    ):
        if not base_url or not model:
            raise EmbeddingError("the openai backend needs base_url and model")
        self.url = base_url.rstrip("/") + "/embeddings"
        # The URL as messages show it: a base_url may carry user:password@.
        parts = urlsplit(self.url)
        self.shown_url = (
            f"{parts.scheme}://{parts.hostname}"
            + (f":{parts.port}" if parts.port else "")
            + parts.path
        )
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_seconds = float(timeout_seconds)
        self.identity = f"openai:{self.url}:{model}"
        # requests.Session is not documented as thread-safe; one per thread
        # keeps connection reuse without sharing one across gunicorn threads.
        self._local = threading.local()

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise EmbeddingError(f"environment variable {self.api_key_env} is not set")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _post(self, payload: dict, headers: dict[str, str]) -> requests.Response:
        """The one outbound HTTP call; every transport failure becomes EmbeddingError."""
        try:
            return self._session().post(
                self.url,
                json=payload,
                headers=headers,
                timeout=(self.timeout_seconds, self.timeout_seconds),
            )
        except requests.Timeout:
            raise EmbeddingError(f"timed out after {self.timeout_seconds:g}s") from None
        except requests.ConnectionError as exc:
            raise EmbeddingError(
                f"cannot connect to {self.shown_url}: {type(exc).__name__}"
            ) from None
        except requests.RequestException as exc:
            raise EmbeddingError(f"request failed: {type(exc).__name__}") from None

    def featurize(self, texts: Sequence[str]) -> list[bytes]:
        if not texts:
            return []
        # Some servers reject an empty string; a space embeds as "nothing".
        inputs = [t if t else " " for t in texts]
        headers = self._headers()
        response = self._post({"model": self.model, "input": inputs}, headers)
        if response.status_code != 200:
            key = headers.get("Authorization", "")[len("Bearer ") :]
            body = response.text[: _ERROR_BODY_CHARS + len(key)]
            if key:
                # Some servers echo what they were sent; the key must not travel
                # on. Redacted before the cut, so no half key is left behind.
                body = body.replace(key, "[redacted]")
            body = " ".join(body[:_ERROR_BODY_CHARS].split())
            raise EmbeddingError(f"HTTP {response.status_code} from {self.shown_url}: {body}")
        try:
            data = response.json()["data"]
        except (ValueError, KeyError, TypeError):
            raise EmbeddingError("response is not JSON with a 'data' list") from None
        return [vector_to_bytes(v) for v in _vectors_in_order(data, len(texts))]

    def finish(self, features: Sequence[bytes]) -> np.ndarray:
        return stack_vectors(features)


def _vectors_in_order(data: object, expected: int) -> list[np.ndarray]:
    if not isinstance(data, list):
        raise EmbeddingError("'data' is not a list")
    if len(data) != expected:
        raise EmbeddingError(f"got {len(data)} vectors for {expected} inputs")
    rows: list[np.ndarray | None] = [None] * expected
    width = None
    for position, item in enumerate(data):
        if not isinstance(item, dict):
            raise EmbeddingError("an item of 'data' is not an object")
        index = item.get("index", position)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected:
            raise EmbeddingError(f"bad index {index!r}")
        if rows[index] is not None:
            raise EmbeddingError(f"index {index} appears twice")
        vector = item.get("embedding")
        if not isinstance(vector, list) or not vector:
            raise EmbeddingError(f"item {index} has no embedding list")
        try:
            raw = np.array(vector)
        except (TypeError, ValueError):
            raise EmbeddingError(f"item {index} is not a flat vector") from None
        # Numbers only: numpy would happily turn "0.5" or True into a float.
        if raw.ndim != 1 or raw.dtype.kind not in "fiu":
            raise EmbeddingError(f"item {index} is not a flat vector of numbers")
        with np.errstate(over="ignore"):
            # float32 is what is cached and compared; a value too big for it
            # becomes inf here and is refused below.
            row = raw.astype(np.float32)
        if not np.isfinite(row).all():
            raise EmbeddingError(f"item {index} has NaN or infinite values")
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise EmbeddingError(f"mismatched dimensions: {width} and {len(row)}")
        rows[index] = row
    return rows  # type: ignore[return-value]
