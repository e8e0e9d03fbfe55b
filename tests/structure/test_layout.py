"""The layout holds: one package per client protocol, no import cycles, no module too long.

Read from the source with ``ast`` (nothing is imported), so a new module,
a new import or a grown file is checked the day it lands.
"""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("routing", "pinch", "metrics", "router_project")
PROTOCOLS = ROOT / "routing" / "protocols"
# What each client protocol package holds (routing/protocols/__init__.py says what each is for).
PROTOCOL_MODULES = {"__init__", "request", "inbound", "reply", "wire", "errors"}
# And what one of them holds besides: the shapes both directions share, the Responses
# store, and, for the two served natively or translated, each path's module.
PROTOCOL_EXTRAS = {
    "chat": set(),
    "messages": {"shapes", "native", "translated"},
    "responses": {"shapes", "store", "native", "translated"},
}
# The native paths (a client and an upstream of the same protocol) translate nothing,
# and the modules that turn a chat answer into another protocol's are not theirs to import.
NATIVE_PATHS = ("routing.protocols.messages.native", "routing.protocols.responses.native")
TRANSLATORS = {
    "routing.protocols.chunks",
    "routing.protocols.messages.reply",
    "routing.protocols.messages.translated",
    "routing.protocols.responses.reply",
    "routing.protocols.responses.translated",
}
MAX_LINES = 450
# What each app may import besides itself: the apps below it.
APPS_BELOW = {
    "pinch": set(),
    "routing": {"pinch"},
    "metrics": {"routing", "pinch"},
    "router_project": {"routing", "metrics", "pinch"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports, at any depth of its code (lazy imports too)."""
    graph = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def _package_graph(graph: dict[str, set[str]], depth: int = 2) -> dict[str, set[str]]:
    """The same imports between packages ``depth`` names deep: at 1 the apps (routing,
    metrics), at 2 routing.protocols, routing.providers, routing.views..."""

    def unit(module: str) -> str:
        return ".".join(module.split(".")[:depth])

    packages = defaultdict(set)
    for module, targets in graph.items():
        packages[unit(module)] |= {unit(t) for t in targets} - {unit(module)}
    return packages


def _reached(graph: dict[str, set[str]], start: str, within: str) -> set[str]:
    """The modules under ``within`` that ``start`` imports, directly or through others there."""
    seen, todo = set(), [start]
    while todo:
        for other in graph.get(todo.pop(), ()):
            if other.startswith(within) and other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


@pytest.mark.parametrize("module", NATIVE_PATHS)
def test_a_native_path_imports_no_translator(module):
    graph = _imports(_modules())
    assert _reached(graph, module, "routing.protocols") & TRANSLATORS == set()


@pytest.mark.parametrize("protocol", ["messages", "responses"])
def test_the_wire_that_picks_a_path_reaches_both(protocol):
    # The reading above sees an import two steps away: the wire reaches the
    # translators through its translated path, and the native path too.
    reached = _reached(_imports(_modules()), f"routing.protocols.{protocol}.wire", "routing")
    assert f"routing.protocols.{protocol}.native" in reached
    assert f"routing.protocols.{protocol}.reply" in reached


def test_no_module_imports_another_in_a_circle():
    assert _cycles(_imports(_modules())) == []


@pytest.mark.parametrize("depth", [1, 2, 3], ids=["apps", "packages", "subpackages"])
def test_no_package_imports_another_in_a_circle(depth):
    assert _cycles(_package_graph(_imports(_modules()), depth)) == []


def test_apps_import_one_way():
    """pinch at the bottom, then routing, then metrics; router_project (urls, wsgi) on top."""
    violations = sorted(
        f"{module} imports {target}"
        for module, targets in _imports(_modules()).items()
        for target in targets
        if target.split(".")[0] != module.split(".")[0]
        and target.split(".")[0] not in APPS_BELOW[module.split(".")[0]]
    )
    assert violations == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("protocol", sorted(PROTOCOL_EXTRAS))
def test_every_protocol_package_has_the_same_modules(protocol):
    modules = {path.stem for path in (PROTOCOLS / protocol).glob("*.py")}
    assert modules == PROTOCOL_MODULES | PROTOCOL_EXTRAS[protocol]


def test_every_protocol_package_is_checked():
    packages = {path.parent.name for path in PROTOCOLS.glob("*/__init__.py")}
    assert packages == set(PROTOCOL_EXTRAS)


def test_no_module_is_over_450_lines():
    long = {
        name: lines
        for name, path in _modules().items()
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
