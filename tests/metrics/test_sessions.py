"""Agent sessions in admin, on the dashboard and in pinch_summary --by-session: one figure set."""

import json
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.utils import timezone

from routing.agent_sessions import agent_sessions
from tests.support.decisions import decision, seed

pytestmark = pytest.mark.django_db

CLAUDE = "d5558455-ea7f-4cd3-a2e4-e3dc8b9f9821"
CODEX = "019a0000-codex"


@pytest.fixture
def sessions(default_config):
    now = timezone.now()
    billed = {"billed_prompt_cost_usd": 0.01, "unpruned_cost_usd": 0.015}

    def claude(minutes, role, model, **fields):
        return decision(
            age=timedelta(minutes=minutes),
            now=now,
            session=CLAUDE,
            agent="claude-code",
            session_role=role,
            chosen_model=model,
            conversation=f"claude-{role}",  # a conversation per role: main, subagent, title
            **fields,
        )

    seed(
        # Claude Code: a user turn, a tool round (pruned), a subagent, a title request
        claude(9, "main", "gpt-4.1", user_turn=True, **billed),
        claude(8, "main", "gpt-4.1", saved=500, **billed),
        claude(7, "subagent", "gpt-4.1-mini", **billed),
        claude(6, "background", "qwen-small"),
        decision(
            age=timedelta(minutes=2),
            now=now,
            session=CODEX,
            conversation="codex",
            agent="codex",
            session_role="main",
            user_turn=True,
        ),
        decision(age=timedelta(minutes=1), now=now),  # no session: a row from before sessions
    )


def test_each_session_sums_its_decisions(sessions):
    codex, claude = agent_sessions()

    assert (codex.session, claude.session) == (CODEX, CLAUDE)
    assert claude.agent == "claude-code"
    assert claude.models == ("gpt-4.1", "gpt-4.1-mini", "qwen-small")
    assert (claude.requests, claude.turns) == (4, 1)
    assert (claude.subagent_requests, claude.background_requests) == (1, 1)
    assert claude.billed_usd == pytest.approx(0.03)
    assert claude.net_saved_usd == pytest.approx(0.015)
    assert claude.last - claude.first == timedelta(minutes=3)
    assert codex.billed_usd is None and codex.net_saved_usd is None


def test_admin_lists_the_sessions_each_linking_to_its_decisions(client, staff_user, sessions):
    staff_user.user_permissions.add(Permission.objects.get(codename="view_routedecision"))
    client.force_login(staff_user)

    page = client.get("/admin/routing/agentsession/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f'href="/admin/routing/routedecision/?session={CLAUDE}"' in html
    assert "gpt-4.1, gpt-4.1-mini, qwen-small" in html

    decisions = client.get(f"/admin/routing/routedecision/?session={CLAUDE}")
    assert decisions.status_code == 200
    assert decisions.context["cl"].result_count == 4


def test_admin_lists_the_sessions_pinch_made_dearer_first(client, staff_user, sessions):
    dearer = decision(
        conversation="dear",
        session="dear-session",
        billed_prompt_cost_usd=0.05,
        unpruned_cost_usd=0.01,
        age=timedelta(hours=2),
    )
    seed(dearer)
    staff_user.user_permissions.add(Permission.objects.get(codename="view_routedecision"))
    client.force_login(staff_user)

    newest_first = client.get("/admin/routing/agentsession/").context["sessions"]
    assert [s.session for s in newest_first] == [CODEX, CLAUDE, "dear-session"]
    page = client.get("/admin/routing/agentsession/?o=net")
    # The dearer session first (-0.04), then those that saved nothing to report, then savers.
    assert [s.session for s in page.context["sessions"]][0] == "dear-session"
    assert page.context["sessions"][-1].session == CLAUDE


def test_admin_sessions_need_the_decision_logs_permission(client, bare_staff_user, sessions):
    client.force_login(bare_staff_user)
    assert client.get("/admin/routing/agentsession/").status_code == 403


def test_the_dashboard_hides_the_sessions_from_staff_who_may_not_view_decisions(
    client, bare_staff_user, sessions
):
    client.force_login(bare_staff_user)
    response = client.get("/dashboard/")
    assert response.status_code == 200
    assert response.context["sessions"] == []


def test_the_dashboard_shows_the_sessions(client, staff_user, sessions):
    client.force_login(staff_user)
    page = client.get("/dashboard/")
    html = page.content.decode()
    assert 'data-testid="agent-sessions"' in html
    assert f'data-session="{CLAUDE}"' in html and f'data-session="{CODEX}"' in html


def test_the_dashboard_marks_a_session_pinch_made_dearer_and_lists_those_first(
    client, staff_user, sessions
):
    seed(
        decision(
            conversation="dear",
            session="dear-session",
            billed_prompt_cost_usd=0.05,
            unpruned_cost_usd=0.01,
            age=timedelta(hours=2),
        )
    )
    client.force_login(staff_user)

    newest = client.get("/dashboard/").content.decode()
    assert re.search(r'<tr data-session="dear-session" data-tone="loss" class="loss">', newest)
    assert f'<tr data-session="{CLAUDE}" data-tone="gain">' in newest
    assert newest.index(f'data-session="{CODEX}"') < newest.index('data-session="dear-session"')
    assert 'href="?sessions=dearer#agent-sessions"' in newest

    dearer = client.get("/dashboard/?sessions=dearer").content.decode()
    assert dearer.index('data-session="dear-session"') < dearer.index(f'data-session="{CODEX}"')
    assert "pinch made dearest" in dearer


def _summary(*args) -> str:
    out = StringIO()
    call_command("pinch_summary", *args, stdout=out)
    return out.getvalue()


def test_pinch_summary_by_session_prints_a_line_per_session(sessions):
    lines = _summary("--by-session").splitlines()
    assert lines[0].startswith("session")
    assert lines[1].startswith(CODEX) and lines[2].startswith(CLAUDE[:38])
    assert "claude-code" in lines[2] and "gpt-4.1, gpt-4.1-mini, qwen-small" in lines[2]


def test_pinch_summary_by_session_as_json_has_the_services_figures(sessions):
    rows = json.loads(_summary("--by-session", "--json"))
    assert [r["session"] for r in rows] == [CODEX, CLAUDE]
    assert rows[1]["requests"] == 4 and rows[1]["turns"] == 1
    assert rows[1]["net_saved_usd"] == pytest.approx(0.015)


def test_the_retries_of_a_failed_prompt_are_not_turns(default_config):
    """One failed `claude -p "hi"`, retried ten times by the agent, then a prompt that works."""

    def hi(minutes, status):
        return decision(
            age=timedelta(minutes=minutes),
            session=CLAUDE,
            agent="claude-code",
            session_role="main",
            conversation="claude-main",
            user_turn=True,
            status_code=status,
        )

    seed(*(hi(20 - i, 529) for i in range(11)), hi(5, 200))

    (claude,) = agent_sessions()
    assert (claude.requests, claude.turns) == (12, 1)


def test_the_newest_sessions_are_listed_whole_however_many_conversations_are_newer(
    default_config, monkeypatch
):
    # A page of 3 conversations: the newest sessions are found over several pages, and a
    # session listed has every conversation it had, however far back.
    monkeypatch.setattr("routing.agent_sessions.NEWEST_PAGE", 3)
    rows = []
    for i in range(6):  # session s0 is the newest, s5 the oldest
        for j in range(4):  # four conversations each, the first of them a day older
            rows.append(
                decision(
                    age=timedelta(minutes=10 * i + j, days=1 if j == 3 else 0),
                    session=f"s{i}",
                    conversation=f"s{i}-c{j}",
                )
            )
    seed(*rows)

    shown = agent_sessions(limit=4)

    assert [row.session for row in shown] == ["s0", "s1", "s2", "s3"]
    assert all(row.requests == 4 for row in shown)
    assert [row.session for row in agent_sessions(limit=4, dearest_first=True)] == [
        "s0",
        "s1",
        "s2",
        "s3",
    ]
