"""Agent sessions: what each one cost and saved, for admin, the dashboard and pinch_summary.

A session is the conversations that carry one ``session`` under one router
key (routing.sessions: Claude Code's or opencode's session id, Codex's
prompt_cache_key, else the router's conversation key): two keys sending the
same session id are two sessions. Its figures, summed over its conversations'
running totals (routing/models/conversation.py): the agent, the models it went
to, its requests, the turns the user spoke in (main conversation only), the
requests of its subagents and background work, the prompt cost as billed, the
net saving of pinch (estimated unpruned cost minus billed, as on the savings
card), and its first and last request. ``since`` keeps the sessions active
since then, with the figures of their whole life.

Three queries whatever the number of decisions (a page more when a page of
conversations holds fewer sessions than are shown): the newest sessions, read
newest first on the ``conversation_last_idx`` index; their conversations
grouped by session; their models. Those pinch made dearer first are the
sessions of the dearest conversations, read on the ``conversation_net_idx``
index (lowest net saving first), ordered by their sessions' net: a session
whose conversations are each only a little dearer can be missed by one whose
single conversation is dearer (grouping every conversation to be exact took
a read of all of them).
Here, in the routing app, because admin's session list (routing.admin.sessions)
shows it as well as the metrics surfaces, and routing never imports metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.db.models import Max, Min, Sum
from django.urls import reverse

from routing.formatting import format_count, format_money, money_tone
from routing.models import Conversation

SESSIONS_SHOWN = 20  # the dashboard's and admin's list: the newest sessions
NEWEST_PAGE = 200  # conversations read at a time to find the newest sessions


@dataclass(frozen=True)
class SessionRow:
    session: str
    api_key_id: int | None
    agent: str
    models: tuple
    requests: int
    turns: int
    subagent_requests: int
    background_requests: int
    billed_usd: float | None  # None: no request of the session reported usage
    net_saved_usd: float | None
    first: datetime
    last: datetime

    @property
    def decisions_url(self) -> str:
        """Admin's decision log filtered to this session."""
        changelist = reverse("admin:routing_routedecision_changelist")
        return f"{changelist}?{urlencode({'session': self.session})}"

    def as_json(self) -> dict:
        return {
            "session": self.session,
            "agent": self.agent,
            "models": list(self.models),
            "requests": self.requests,
            "turns": self.turns,
            "subagent_requests": self.subagent_requests,
            "background_requests": self.background_requests,
            "billed_prompt_cost_usd": _rounded(self.billed_usd),
            "net_saved_usd": _rounded(self.net_saved_usd),
            "first_request": self.first.isoformat(),
            "last_request": self.last.isoformat(),
        }

    def shown(self) -> dict:
        """The figures as every surface shows them; ``tone`` colours the net saving (a session
        pinch made dearer reads ``loss``)."""
        return {
            "requests": format_count(self.requests),
            "turns": format_count(self.turns),
            "billed": format_money(self.billed_usd),
            "net_saved": format_money(self.net_saved_usd),
            "tone": money_tone(self.net_saved_usd),
        }


def _rounded(value):
    return None if value is None else round(value, 6)


def _first(conversations, order: tuple, limit: int) -> set[str]:
    """The sessions of the first ``limit`` (key, session) pairs in ``order``, read on its index
    a page at a time until that many are seen. Newest first (``-last_at``): a session's
    newest conversation is its last request, so no older conversation belongs to a newer
    session. At a team's 100,000 conversations this reads a page of rows where grouping
    them all took ~100 ms."""
    seen: set = set()
    ordered = conversations.order_by(*order).values_list("api_key", "session")
    start = 0
    while True:
        page = list(ordered[start : start + NEWEST_PAGE])
        for pair in page:
            seen.add(pair)
            if len(seen) == limit:
                return {session for _, session in seen}
        if len(page) < NEWEST_PAGE:
            return {session for _, session in seen}
        start += NEWEST_PAGE


def agent_sessions(
    limit: int = SESSIONS_SHOWN, since: datetime | None = None, dearest_first: bool = False
) -> list[SessionRow]:
    """The ``limit`` sessions with the newest last request (active since ``since``), newest
    first; ``dearest_first``: those pinch made dearer first (the lowest net saving)."""
    conversations = Conversation.objects.exclude(session="")
    if since is not None:
        conversations = conversations.filter(last_at__gte=since)
    first = ("net_saved_usd", "id") if dearest_first else ("-last_at",)
    conversations = conversations.filter(session__in=_first(conversations, first, limit))
    grouped = conversations.values("api_key", "session").annotate(
        agent=Max("agent"),
        requests=Sum("requests"),
        turns=Sum("turns"),
        subagent_requests=Sum("subagent_requests"),
        background_requests=Sum("background_requests"),
        billed_requests=Sum("billed_requests"),
        billed=Sum("billed_usd"),
        net=Sum("net_saved_usd"),
        first=Min("first_at"),
        last=Max("last_at"),
    )
    # An explicit order replaces Meta.ordering, which would add last_at to the GROUP BY.
    order = ("net", "-last") if dearest_first else ("-last",)
    grouped = list(grouped.order_by(*order, "session", "api_key")[:limit])
    models: dict = {}
    shown = conversations.filter(session__in={g["session"] for g in grouped})
    for key, session, used in shown.values_list("api_key", "session", "models_used"):
        models.setdefault((key, session), set()).update(filter(None, used.split("|")))
    return [
        SessionRow(
            session=g["session"],
            api_key_id=g["api_key"],
            agent=g["agent"],
            models=tuple(sorted(models.get((g["api_key"], g["session"]), ()))),
            requests=g["requests"],
            turns=g["turns"],
            subagent_requests=g["subagent_requests"],
            background_requests=g["background_requests"],
            # None: no request of the session reported usage.
            billed_usd=g["billed"] if g["billed_requests"] else None,
            net_saved_usd=g["net"] if g["billed_requests"] else None,
            first=g["first"],
            last=g["last"],
        )
        for g in grouped
    ]
