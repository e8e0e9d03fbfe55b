"""The real opencode against errors a retry cannot mend: it stops at once, with the router's words.

opencode speaks chat completions through the AI SDK, which retries 408, 409,
429 and every 5xx (its ``APICallError.isRetryable``) and reads no
``x-should-retry``: a final error must be a 4xx outside those
(routing.errors.is_final). Each case runs ``opencode run`` with the README's
config naming the model; the router counts the answers it refused. Measured
with 1.18.33 (printed by each case): 2.9-4.0 s from the router's first
answer to opencode's exit (its start-up, 5-8 s here, apart).
"""

import json
import logging
import time

import pytest

from tests.routing import test_opencode as opencode
from tests.support import final_errors
from tests.support.final_errors import REAL_CLIENT_CASES, break_config, refused_answers

# The opencode test's own fixtures and helpers: one way to install, set up and run it.
opencode_bin, scratch_repo = opencode.opencode_bin, opencode.scratch_repo
final_config = final_errors.final_config  # the final-error tests' config

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "case, model, shown",
    # The AI SDK does not retry a 401 either: a wrong router key is final for opencode.
    [("wrong router key", "script-agent", "Missing or invalid API key"), *REAL_CLIENT_CASES],
)
def test_opencode_stops_at_a_final_error_showing_the_routers_message(
    case,
    model,
    shown,
    final_config,
    write_config,
    tmp_path,
    live_server,
    opencode_bin,
    scratch_repo,
    upstream,
    api_key,
    caplog,
):
    config = opencode.opencode_config(live_server.url)
    config["provider"]["router"]["models"] = {model: {}}
    config["model"] = config["small_model"] = f"router/{model}"
    (scratch_repo / "opencode.json").write_text(json.dumps(config))
    home = tmp_path / "home"
    home.mkdir()
    key = "rk-wrong" if case == "wrong router key" else api_key
    if case == "config broken":
        break_config(final_config, write_config)

    with caplog.at_level(logging.WARNING, logger="router.requests"):
        started = time.time()
        done, _ = opencode.run_opencode(opencode_bin, scratch_repo, home, key)
        ended = time.time()

    # From the router's first answer to opencode's exit (its own start-up, ~5 s here, apart).
    first = min((r.created for r in caplog.records if r.name == "router.requests"), default=ended)
    seconds = ended - first
    report = f"{seconds:.1f}s after the request ({ended - started:.1f}s in all) exit "
    report += f"{done.returncode} refused {refused_answers(caplog)}\n"
    report += f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    print(report)
    assert shown in done.stdout + done.stderr, report
    # Two calls, neither retried (the AI SDK would make three of each): the task's, and
    # the session title opencode asks its small model for. How long it took is printed
    # (speed is the benchmarks' to measure, not a test's).
    assert len(refused_answers(caplog)) == 2, report
    assert upstream.received == []
