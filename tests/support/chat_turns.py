"""Chat-completions turns of an agent's tool loop, for tests that build conversations."""


def tool_call_round(k: int, output: str = "x", name: str = "cat") -> list[dict]:
    """One round of the loop: the assistant's call ``c<k>`` and its result ``output``."""
    call = {"id": f"c{k}", "type": "function", "function": {"name": name, "arguments": "{}"}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": output},
    ]
