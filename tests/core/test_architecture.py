"""The trunk's shape, checked from the source: no import circles (type-only and
function-level imports included), capabilities declared rather than probed, one vocabulary,
and one place where a node's script is journaled and run."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mlguild

PACKAGE = Path(mlguild.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        found[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every package module ``name`` imports, anywhere in the file (TYPE_CHECKING blocks and
    function bodies included): ``from x import y`` counts x, and x.y when that is a module."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            # a module importing its own package's __init__ is not a circle by itself
            if target in modules and target != name and not name.startswith(target + "."):
                out.add(target)
    return out


def import_circles(modules: dict[str, Path]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return circles


def test_the_package_has_no_import_circles():
    assert import_circles(_modules()) == []


def test_the_circle_check_finds_a_type_only_circle(tmp_path, monkeypatch):
    # The check itself must catch what it is for: two modules importing each other, one of
    # them only for a type annotation.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import B\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\nclass B: ...\n"
    )
    modules = {"pkg": pkg / "__init__.py", "pkg.a": pkg / "a.py", "pkg.b": pkg / "b.py"}
    assert import_circles(modules) == [["pkg.a", "pkg.b"]]


def _source_lines() -> list[tuple[str, int, str]]:
    return [
        (str(path.relative_to(PACKAGE)), number, line)
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
    ]


def test_brain_capabilities_are_declared_not_probed():
    # A brain's or sandbox's optional powers are Protocols checked with isinstance
    # (mlguild.core.protocols), never names probed with getattr/hasattr.
    probe = re.compile(
        r"""(getattr|hasattr)\([^)]*["'](concurrent|explores|has_last_resort|fix_step|cancel_all|llm|llm_brain)["']"""
    )
    assert [f"{where}:{n}" for where, n, line in _source_lines() if probe.search(line)] == []


def test_ops_and_statuses_are_not_spelled_as_string_literals():
    # The node vocabulary is the StrEnums of mlguild.core.vocabulary; comparisons with a
    # quoted op or status name would drift from it unseen.
    words = (
        "eda|draft|improve|debug|evolve|fuse|blend|rerun|refit|pending|scored|explored|crash|timeout|truncated|no_code"
    )
    literal = re.compile(rf"""(\.op|status|kind) *(==|!=|in|not in) *\(?["']({words})["']""")
    action = re.compile(rf"""Action\(["']({words})["']""")
    found = [
        f"{where}:{n}: {line.strip()}"
        for where, n, line in _source_lines()
        if literal.search(line) or action.search(line)
    ]
    assert found == []


def test_scripts_are_journaled_and_run_in_one_module():
    # Every node's script is written, journaled and run by mlguild.run.node (the executor
    # records only the node that tampered with the scorer, and then stops the run).
    start = re.compile(r"\brecord_(started|restarted)\(")
    execute = re.compile(r"\bexecutor\.execute\(|\brunner\.execute\(")
    step = re.compile(r"""append\(\s*["']node_step["']""")
    places = {
        where
        for where, _, line in _source_lines()
        if (start.search(line) and "def record_" not in line) or execute.search(line) or step.search(line)
    }
    assert places == {"run/node.py"}
