"""/dashboard/ costs the same number of queries for 10 decisions as for 200."""

from datetime import timedelta

import pytest

from routing.auth import create_api_key
from tests.support.decisions import decision, seed

MODELS = ("gpt-4.1", "gpt-4.1-mini", "qwen-small", "retired-model")

# session + user (the login), the user's permissions and its groups' (may it view
# decisions?), ConfigOverride + RegisteredModel (current_config), pinch_summary's
# three (summaries by model, the median's histogram, the conversations' net),
# savings per day and model, the newest 50 with their key,
# the limited keys (none here: no spend query follows), the agent sessions
# (the newest, grouped, and their models), the quality card's three (metrics.quality: each arm's
# conversations, its tasks, its conversations stopped mid loop), the savings by cause's two
# (its causes, pinch's net) and the cache forecast's two (summaries, conversations surprised).
DASHBOARD_QUERIES = 22


@pytest.mark.parametrize("rows", [10, 200])
def test_the_dashboard_query_count_does_not_grow_with_rows(
    client, staff_user, default_config, django_assert_num_queries, rows
):
    keys = [create_api_key(f"agent-{i}")[0] for i in range(5)]
    seed(
        *(
            decision(
                age=timedelta(hours=i * 3),
                chosen_model=MODELS[i % len(MODELS)],
                saved=None if i % 6 == 0 else (i % 9) * 250,
                api_key=keys[i % len(keys)],
                stream=i % 2 == 0,
                session=f"session-{i % 7}",
                conversation=f"conversation-{i % 7}",
            )
            for i in range(rows)
        )
    )
    client.force_login(staff_user)

    with django_assert_num_queries(DASHBOARD_QUERIES):
        response = client.get("/dashboard/")

    assert response.status_code == 200
    assert len(response.context["decisions"]) == min(rows, 50)
    assert len(response.context["sessions"]) == 7
    assert response.context["summary"]["calls_30d"] == min(rows, 240)  # 3-hour steps, 30 days
    assert "agent-" in response.content.decode()  # the key names came with the rows
