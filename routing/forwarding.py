"""What a client may make a native Anthropic upstream do on the operator's account.

The router passes a Claude client's body and its ``anthropic-beta`` flags on
to Anthropic (Claude Code depends on both). Some of them turn on work done
server-side and billed to the operator: ``mcp_servers`` makes Anthropic call
URLs the client chose, ``container`` runs code, betas such as
``mcp-client-*`` or ``code-execution-*`` unlock them. So only what the config
allows goes (``forwarding`` in routing/config/schema.py, docs/anthropic.md):
the plain Messages fields always, other top-level body fields only when
listed in ``anthropic_body_fields``, beta flags only when listed in
``anthropic_beta`` (``"*"``: every flag). What is held back is logged.
"""

import logging

log = logging.getLogger(__name__)

# The Messages API's own request fields: what any client of the API may send.
PLAIN_FIELDS = frozenset(
    {
        "model",
        "messages",
        "system",
        "max_tokens",
        "metadata",
        "stop_sequences",
        "stream",
        "temperature",
        "top_p",
        "top_k",
        "tools",
        "tool_choice",
        "thinking",
    }
)


def allowed_body(body: dict, forwarding) -> dict:
    """The body with the top-level fields the config does not allow left out."""
    extra = set(forwarding.anthropic_body_fields)
    dropped = [name for name in body if name not in PLAIN_FIELDS and name not in extra]
    if not dropped:
        return body
    log.info("anthropic_fields_held_back fields=%s", ",".join(sorted(dropped)))
    return {name: value for name, value in body.items() if name not in dropped}


def allowed_headers(headers: dict, forwarding) -> dict:
    """The client's Anthropic headers, its beta flags cut to the allowed ones."""
    betas = [flag.strip() for flag in (headers.get("anthropic-beta") or "").split(",")]
    betas = [flag for flag in betas if flag]
    if not betas:
        return headers
    allowed = set(forwarding.anthropic_beta)
    kept = betas if "*" in allowed else [flag for flag in betas if flag in allowed]
    if len(kept) < len(betas):
        held = sorted(set(betas) - set(kept))
        log.info("anthropic_betas_held_back betas=%s", ",".join(held))
    headers = {name: value for name, value in headers.items() if name != "anthropic-beta"}
    if kept:
        headers["anthropic-beta"] = ",".join(kept)
    return headers
