"""The pinch core stays pure: importable without Django, HTTP clients or settings, and I/O-free.

Runs in a subprocess so that blocking imports and installing an audit hook
cannot leak into the rest of the test session.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_SCRIPT = textwrap.dedent(
    """
    import sys

    BLOCKED = {"django", "requests", "rest_framework"}

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"pinch core must not import {name}")
            return None

    sys.meta_path.insert(0, Blocker())
    for name in BLOCKED:
        sys.modules.pop(name, None)

    import pinch
    import pinch.core
    import pinch.prefix
    import pinch.lines
    import pinch.payback
    from pinch import (
        CHARS_PER_TOKEN, estimate_tokens, extract_text, order_by_relevance, prune_context,
        trim_candidates,
    )

    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not loaded, loaded
    edge = sorted(m for m in sys.modules if m.startswith(("pinch.relevance", "pinch.embed")))
    assert not edge, f"pinch/__init__ pulled in edge modules: {edge}"

    # From here on, any file, network or process access is a failure.
    def no_io(event, args):
        if event in {"open", "socket.connect", "socket.getaddrinfo", "subprocess.Popen",
                     "os.system", "import"}:
            raise RuntimeError(f"pinch did I/O: {event} {args!r:.80}")

    sys.addaudithook(no_io)
    messages = [{"role": "user", "content": "q"}]
    for i in range(6):
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x\\n" * 5000})
        messages.append({"role": "user", "content": "go on"})
    out, stats = prune_context(messages, budget_tokens=100, relevance_order=[1, 0])
    assert stats["pruned"], stats
    prune_context(messages, budget_tokens=100)
    order_by_relevance([1.0, 0.0], [[0.0, 1.0], [1.0, 0.0]])
    pinch.prefix.common_prefix_length(
        pinch.prefix.message_fingerprints(messages), pinch.prefix.message_fingerprints(out)
    )
    print("pure")
    """
)


def test_pinch_core_imports_and_runs_without_django_requests_or_io():
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        check=False,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pure"
