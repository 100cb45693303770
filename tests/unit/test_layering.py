"""The package's import graph: no cycles, and no subpackage imports one above it.

Layers, lowest first: ``errors`` < ``cluster`` < ``store`` < ``spark``, ``lab`` and
``serve`` (side by side, none imports another) < ``ops`` < ``cli``. Read from the
source with :mod:`ast`, so a lazy import inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "casstor_ops"
LAYERS = {"errors": 0, "cluster": 1, "store": 2, "spark": 3, "lab": 3, "serve": 3, "ops": 4, "cli": 5}


def _module(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("casstor_ops"):
            found |= {f"{node.module}.{a.name}" if node.module == "casstor_ops" else node.module for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("casstor_ops")}
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.add(f"relative import in {path.name}")
    return found


def _graph() -> dict[str, set[str]]:
    return {_module(p): _imports(p) for p in PACKAGE.rglob("*.py")}


def _top(module: str) -> str:
    return module.split(".")[1] if "." in module else "casstor_ops"


def test_every_module_belongs_to_a_known_layer() -> None:
    assert {_top(m) for m in _graph()} - {"casstor_ops"} == set(LAYERS)


def test_no_subpackage_imports_a_layer_above_it_or_its_sibling() -> None:
    wrong = sorted((m, t) for m, targets in _graph().items() for t in targets
                   if _top(m) in LAYERS and (LAYERS.get(_top(t), 99) > LAYERS[_top(m)]
                                             or (LAYERS.get(_top(t)) == LAYERS[_top(m)] and _top(t) != _top(m))))
    assert wrong == []


def test_imports_are_absolute() -> None:
    assert not [t for targets in _graph().values() for t in targets if t.startswith("relative import")]


def test_no_import_cycles() -> None:
    graph = _graph()
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join(path + (module,))}"
        if module in done:
            return
        for target in graph.get(module, ()):
            visit(target, path + (module,))
        done.add(module)

    for module in graph:
        visit(module, ())


# Inside the store, its rooms lowest first (the __init__.py of each says why it stands where it does): a module
# imports rooms on its own floor or below, and of its own floor only its own room. bulk/ (the tree runners) stands
# above the Store facade, which everything outside the store goes through.
STORE = "casstor_ops.store"
STORE_FLOORS = {"cql": 0, "records": 0, "ids": 0, "progress": 0, "gc_thresholds": 0, "malloc_thresholds": 0,
                "coordination": 1, "trees": 1, "blocks": 2, "namespace": 3, "schema": 4, "engine": 5, "history": 6,
                "api": 7, "bulk": 8}
STORE_BASE = {f"{STORE}.cql.statements", f"{STORE}.cql.keyspaces", f"{STORE}.records"}


def _room(module: str) -> str:
    return module.split(".")[2]


def _store_imports(prefix: str) -> dict[str, set[str]]:
    return {m: {t for t in targets if t.startswith(STORE + ".")}
            for m, targets in _graph().items() if m.startswith(prefix + ".")}


def test_coordination_imports_only_the_store_base_and_itself() -> None:
    wrong = sorted((m, t) for m, targets in _store_imports(f"{STORE}.coordination").items() for t in targets
                   if t not in STORE_BASE and not t.startswith(f"{STORE}.coordination."))
    assert wrong == []


def test_trees_import_no_engine_module() -> None:
    trees = _store_imports(f"{STORE}.trees")
    wrong = sorted((m, t) for m, targets in trees.items() for t in targets
                   if t not in STORE_BASE and not t.startswith(f"{STORE}.trees."))
    assert wrong == [] and trees


def test_nothing_in_the_store_imports_bulk_but_bulk() -> None:
    below = {m: t for m, t in _store_imports(STORE).items() if not m.startswith(f"{STORE}.bulk.")}
    assert sorted((m, t) for m, targets in below.items() for t in targets if t.startswith(f"{STORE}.bulk.")) == []


def test_every_store_module_stands_in_a_room_of_a_known_floor() -> None:
    assert {_room(m) for m in _store_imports(STORE)} == set(STORE_FLOORS)


def test_no_store_room_imports_a_room_above_it_or_beside_it() -> None:
    wrong = sorted((m, t) for m, targets in _store_imports(STORE).items() for t in targets
                   if STORE_FLOORS[_room(t)] > STORE_FLOORS[_room(m)]
                   or (STORE_FLOORS[_room(t)] == STORE_FLOORS[_room(m)] and _room(t) != _room(m)))
    assert wrong == []
