"""Which stages of the request path a call enters, in order, and which it enters again.

A stage is a module (or, for the dispatcher and each provider kind, a
package) that does one step of a request: the view, the completion service,
a protocol's request, inbound, wire, native, translated and reply modules,
the pipeline, the dispatcher, the provider registry and each provider kind.
Everything else is a value passed between them or a library they share
(the canonical request, the frozen plan, the protocols' shared schema and
base, the providers' HTTP plumbing, pinch, the config, JSON, Django) or a
named service with two phases by design (the limits: admit, then take; the
recording: open, then finish), and is not a stage.

A stage is *entered* when a Python function of it is called from outside it
(the nearest stage up the stack is another one); it is entered *again* when
that happens after it was left, i.e. while it is not on the stack.
"""

import sys

# Shared values and plumbing inside the packages whose other modules are stages.
SHARED = (
    "routing.protocols.base",
    "routing.protocols.canonical",
    "routing.protocols.schema",
    "routing.providers.base",
    "routing.providers.http",
    "routing.providers.connections",
    "routing.providers.framing",
    "routing.providers.sse",
    "routing.providers.deadlines",
    "routing.providers.redact",
)
# Packages walked as one stage each.
PACKAGES = ("routing.dispatch", "routing.providers.anthropic")
MODULES = ("routing.views", "routing.completion", "routing.pipeline", "routing.providers")


def stage(module: str) -> str | None:
    """The stage a module belongs to, or None for a value, a library or a service."""
    if module in SHARED or module.endswith(".shapes"):
        # A protocol's shapes: what its directions share (ids, usage, items).
        return None
    for package in PACKAGES:
        if module == package or module.startswith(package + "."):
            return package
    if module in MODULES or module.startswith("routing.providers."):
        return module
    if module.startswith("routing.protocols."):
        return module
    return None


def _stage_of(frame) -> str | None:
    return stage(frame.f_globals.get("__name__", ""))


def _nearest_stage(frame) -> str | None:
    while frame is not None:
        found = _stage_of(frame)
        if found is not None:
            return found
        frame = frame.f_back
    return None


def _on_stack(frame, name: str) -> bool:
    while frame is not None:
        if _stage_of(frame) == name:
            return True
        frame = frame.f_back
    return False


def walked(call):
    """(what ``call()`` returned, the stages in the order first entered, those entered again)."""
    entered: list[str] = []
    again: list[str] = []

    def profile(frame, event, arg):
        if event != "call":
            return
        name = _stage_of(frame)
        if name is None or _nearest_stage(frame.f_back) == name:
            return
        if name not in entered:
            entered.append(name)
        elif not _on_stack(frame.f_back, name):
            again.append(f"{name} (from {frame.f_code.co_name})")

    sys.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    return result, entered, again
