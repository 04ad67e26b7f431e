"""The package layout reads as the pipeline: each stage imports only earlier stages, no module
imports another's private names, there are no import cycles, and every module says what it
exports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "ceql"

ARCHITECTURE = PACKAGE.parents[1] / "ARCHITECTURE.md"


def _allowed() -> dict[str, set[str]]:
    """Stage → the stages it may import (besides itself), read from ARCHITECTURE.md's table
    of layers (``| `stage`, … | may import |``); ``ceql`` is the public API module."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text[text.index("| stage | may import |"):].split("\n\n", 1)[0]
    out: dict[str, set[str]] = {}
    for row in table.splitlines()[2:]:
        stages, allowed = (cell.strip() for cell in row.strip("|").split("|"))
        names = {x.strip() for x in allowed.split(",")} - {"—"}
        for stage in stages.split(","):
            out[stage.strip().split("`")[1]] = names
    return out


ALLOWED = _allowed()


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "ceql"


def _imports(module: str, path: Path) -> list[tuple[str, list[str]]]:
    """(imported module, names) for every ceql import of ``module``, at module level or in a
    function alike."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "ceql":
                continue
            names = [a.name for a in node.names]
            # ``from pkg import submodule`` imports a module
            for name in names:
                if f"{target}.{name}" in MODULES:
                    out.append((f"{target}.{name}", []))
            rest = [n for n in names if f"{target}.{n}" not in MODULES]
            if rest:
                out.append((target, rest))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "ceql":
                    out.append((a.name, []))
    return out


@pytest.mark.parametrize("module", sorted(MODULES))
def test_stages_import_only_earlier_stages(module: str) -> None:
    stage = _stage(module)
    assert stage in ALLOWED, f"{module}: stage {stage!r} is not in the layout table"
    for target, _ in _imports(module, MODULES[module]):
        other = _stage(target)
        assert other == stage or other in ALLOWED[stage], (
            f"{module} imports {target}: stage {stage!r} may not depend on {other!r}")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_names_cross_modules(module: str) -> None:
    for target, names in _imports(module, MODULES[module]):
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        assert not private, f"{module} imports private names {private} from {target}"


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m, path in MODULES.items():
        for target, _ in _imports(m, path):
            if target in MODULES and target != m:  # function-level imports count too
                graph[m].add(target)
    # a package's __init__ re-exporting its modules is not a cycle through them
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if n.startswith(m + "."):
                continue  # a package importing its own submodules
            if state.get(n) == 1:
                cycle = [*path[path.index(n):], n] if n in path else [m, n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n, [*path, n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_declares_its_exports(module: str) -> None:
    path = MODULES[module]
    if path.name == "__main__.py":
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert ast.get_docstring(tree), f"{module} has no docstring"
    declared = any(isinstance(n, (ast.Assign, ast.AnnAssign)) and any(
        isinstance(t, ast.Name) and t.id == "__all__"
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
        for n in tree.body)
    assert declared, f"{module} has no __all__"
