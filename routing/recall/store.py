"""The originals pinch took out, kept per conversation under their handles."""


def original(conversation: str, handle: str, pending: dict) -> str | None:
    """The original text behind ``handle`` in ``conversation``; None when it is not kept.

    ``pending``: what this very request's pinch took out (PinchOutcome.recallable),
    which the model may ask for before it is stored.
    """
    return pending.get(handle)
