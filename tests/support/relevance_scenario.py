"""A conversation whose relevant tool results are known, and the pinch settings to rank it."""

from __future__ import annotations

from types import SimpleNamespace

FILLER = "\n".join(f"    line {i}: nothing of note happens here" for i in range(45))

RESULTS = [
    "$ cat billing/invoice.py\nclass Invoice:\n    def compute_total(self):\n"
    "        return self.apply_discount(self.subtotal() + self.vat())\n" + FILLER,
    "$ ls static/img\nlogo.png banner.jpg favicon.ico\n" + FILLER,
    "$ docker ps\nCONTAINER ID IMAGE STATUS\n3f2a redis:7 Up 2 hours\n" + FILLER,
    "$ pytest tests/billing\nFAILED test_discount_then_vat: compute_total 97.19 != 97.20\n"
    + FILLER,
    "$ df -h\nFilesystem Size Used Avail Use%\n/dev/vda 252G 23G 80G 22%\n" + FILLER,
]

QUERY = "The invoice total is a cent off with a discount code: fix compute_total."


def conversation(results=RESULTS, query=QUERY, later_turns=2):
    """A user request, one tool round per result, then ``later_turns`` short user turns."""
    messages = [{"role": "system", "content": "You are a coding agent."}]
    messages.append({"role": "user", "content": "Earlier: set up the project."})
    for i, text in enumerate(results):
        call = f"call_{i}"
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "bash", "arguments": "{}"},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call, "content": text})
    for k in range(later_turns - 1):
        messages.append({"role": "user", "content": f"ok, carry on ({k})"})
        messages.append({"role": "assistant", "content": "carrying on"})
    messages.append({"role": "user", "content": query})
    return messages


def make_cfg(**relevance_overrides):
    rel = {
        "enabled": True,
        "backend": "builtin",
        "model": "nomic-embed-text",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": None,
        "timeout_seconds": 5.0,
        "min_candidates": 2,
        "max_chars": 2000,
    }
    rel.update(relevance_overrides)
    return SimpleNamespace(
        enabled=True,
        budget_tokens=500,
        keep_last_turns=2,
        keep_last_tool_results=None,
        window_step=None,
        max_summarize_chars=4000,
        protected_max_chars=20000,
        prefix_probe=False,
        relevance=SimpleNamespace(**rel),
    )
