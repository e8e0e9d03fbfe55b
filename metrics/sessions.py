"""Agent sessions: what each one cost and saved, for admin, the dashboard and pinch_summary.

A session is the decisions that carry one ``session`` (routing.sessions: Claude
Code's or opencode's session id, Codex's prompt_cache_key, else the router's
conversation key). Its figures: the agent, the models it went to, its
requests, the turns the user spoke in (main conversation only), the requests
of its subagents and background work, the prompt cost as billed, the net
saving of pinch (estimated unpruned cost minus billed, as on the savings
card), and its first and last request.

Two queries whatever the traffic: one grouped by session (served by the
``decision_session_idx`` index), one for the models of the sessions shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.db.models import Count, Max, Min, Q, Sum
from django.urls import reverse

from routing.formatting import format_count, format_money
from routing.models import BILLED, NET_SAVED, RouteDecision

SESSIONS_SHOWN = 20  # the dashboard's and admin's list: the newest sessions


@dataclass(frozen=True)
class SessionRow:
    session: str
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
        """The figures as every surface shows them."""
        return {
            "requests": format_count(self.requests),
            "turns": format_count(self.turns),
            "billed": format_money(self.billed_usd),
            "net_saved": format_money(self.net_saved_usd),
        }


def _rounded(value):
    return None if value is None else round(value, 6)


def agent_sessions(limit: int = SESSIONS_SHOWN, since: datetime | None = None) -> list[SessionRow]:
    """The ``limit`` sessions with the newest last request (since ``since``), newest first."""
    decisions = RouteDecision.objects.exclude(session="")
    if since is not None:
        decisions = decisions.since(since)
    grouped = (
        decisions.values("session")
        .annotate(
            agent=Max("agent"),
            requests=Count("id"),
            turns=Count("id", filter=Q(user_turn=True, session_role="main")),
            subagent_requests=Count("id", filter=Q(session_role="subagent")),
            background_requests=Count("id", filter=Q(session_role="background")),
            billed=Sum("billed_prompt_cost_usd"),
            net=Sum(NET_SAVED, filter=BILLED),
            first=Min("created_at"),
            last=Max("created_at"),
        )
        # An explicit order replaces Meta.ordering, which would add created_at to the GROUP BY.
        .order_by("-last", "session")[:limit]
    )
    grouped = list(grouped)
    models: dict = {}
    pairs = (
        decisions.filter(session__in=[g["session"] for g in grouped])
        .values_list("session", "chosen_model")
        .distinct()
        .order_by("session", "chosen_model")
    )
    for session, model in pairs:
        models.setdefault(session, []).append(model)
    return [
        SessionRow(
            session=g["session"],
            agent=g["agent"],
            models=tuple(models.get(g["session"], ())),
            requests=g["requests"],
            turns=g["turns"],
            subagent_requests=g["subagent_requests"],
            background_requests=g["background_requests"],
            billed_usd=g["billed"],
            net_saved_usd=g["net"],
            first=g["first"],
            last=g["last"],
        )
        for g in grouped
    ]
