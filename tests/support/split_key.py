"""An answer that names the key the upstream was sent, cut between two text deltas.

Each test upstream (chat completions, Messages, Responses) plays it for its
``*splitkey*`` model, so a test can hold the router to redacting a key no
single event holds whole (the client joins the deltas and would read it).
"""

CUT = 6  # "sk-pro" | "vider-..."


def answer(key: str) -> str:
    return f"the key is {key} ok"


def deltas(key: str) -> list[str]:
    """The answer in two text deltas, the key cut between them."""
    return [f"the key is {key[:CUT]}", f"{key[CUT:]} ok"]
