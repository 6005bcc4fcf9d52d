"""The trunk's shape, checked from the source: no import circles among modules nor loops
among folders (type-only and function-level imports included), the folders in
ARCHITECTURE.md's bottom-up order, capabilities declared rather than probed, one
vocabulary (a node's words and the journal's events, each named once), and one place where a
node's script is journaled and run."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mlguild
from mlguild.core.vocabulary import Event

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
    """The strongly connected components of more than one module."""
    return _circles({name: _imports(name, path, modules) for name, path in modules.items()})


def _folder(module: str) -> str:
    """The top-level folder (or top-level module) of ``mlguild.a.b``: ``a``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def folder_imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Which folders each folder of the package imports (its own left out)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        mine = _folder(name)
        graph.setdefault(mine, set()).update(_folder(t) for t in _imports(name, path, modules) if _folder(t) != mine)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one vertex (Tarjan's algorithm)."""
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


def test_no_folder_imports_a_folder_that_imports_it_back():
    assert _circles(folder_imports(_modules())) == []


def test_core_imports_nothing_of_mlguild_outside_core():
    graph = folder_imports(_modules())
    assert graph["core"] == set()


def _architecture_order() -> list[str]:
    """The folders of ARCHITECTURE.md's "Folders, bottom up" table, in its order."""
    text = (PACKAGE.parents[1] / "ARCHITECTURE.md").read_text()
    table = text.split("## Folders, bottom up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)/` \|", table, re.M)


def test_architecture_lists_the_folders_bottom_up():
    # A folder may import only the folders above it in the table: the table is then a
    # true order, and a new folder or a new upward import shows here first.
    order = _architecture_order()
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert sorted(folders - set(order)) == [], "folders missing from ARCHITECTURE.md's table"
    place = {name: i for i, name in enumerate(order)}
    upward = sorted(
        f"{a} imports {b}"
        for a, targets in folder_imports(_modules()).items()
        if a in place
        for b in targets
        if b in place and place[b] > place[a]
    )
    assert upward == []


def test_the_folder_check_finds_a_loop_through_a_function_level_import(tmp_path):
    # Two folders whose modules import each other, one only inside a function: no module
    # circle (x imports y, y imports nothing of x's module), and yet a folder loop.
    files = {
        "pkg/__init__.py": "",
        "pkg/a/__init__.py": "",
        "pkg/a/x.py": "def f():\n    from ..b.y import g\n",
        "pkg/a/z.py": "",
        "pkg/b/__init__.py": "",
        "pkg/b/y.py": "from ..a.z import *\ndef g(): ...\n",
    }
    modules = {}
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        parts = Path(rel).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    assert import_circles(modules) == []
    assert _circles(folder_imports(modules)) == [["a", "b"]]


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


def _calls(tree: ast.AST) -> list[tuple[ast.Call, str]]:
    """Every call in ``tree`` with what it calls as written (``session.run.journal.append``)."""
    return [(n, ast.unparse(n.func)) for n in ast.walk(tree) if isinstance(n, ast.Call)]


def _trees() -> dict[str, ast.AST]:
    return {str(p.relative_to(PACKAGE)): ast.parse(p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))}


# What journals a node's script (its first run, a restart, a refine-loop step), runs it, and
# journals its outcome.
SCRIPT_CALLS = re.compile(
    r"(^|\.)(record_started|record_restarted|record_step_script|record_finished|executor\.execute|runner\.execute)$"
)


def scripts_journaled_or_run(trees: dict[str, ast.AST]) -> dict[str, list[int]]:
    """Per module, the lines where it journals or runs a node's script (calls over several lines included)."""
    found: dict[str, list[int]] = {}
    for where, tree in trees.items():
        for call, name in _calls(tree):
            if SCRIPT_CALLS.search(name):
                found.setdefault(where, []).append(call.lineno)
    return found


def test_scripts_are_journaled_and_run_in_one_module():
    # Every node's script is written, journaled and run, and its outcome journaled, by
    # mlguild.run.node: a first run, a restart, a refine-loop step, a fall back to an earlier
    # step, the node that tampered with the scorer (ARCHITECTURE.md's invariant). The writers
    # themselves are mlguild.rundir.records'.
    assert set(scripts_journaled_or_run(_trees())) == {"run/node.py"}


def test_the_node_path_check_reads_calls_over_several_lines():
    tree = ast.parse(
        "def f(session, node):\n    record_step_script(\n        session.run.journal, node, 2, 'why'\n    )\n"
    )
    assert scripts_journaled_or_run({"run/steps.py": tree}) == {"run/steps.py": [2]}


EVENT_WRITERS = {"rundir/records.py", "rundir/events.py"}


def event_names_spelled(trees: dict[str, ast.AST]) -> list[str]:
    """Journal event names written as strings outside core/vocabulary (``append("node_step", ...)``,
    ``r["type"] == "llm_call"``, ``kind in ("watched", ...)``, or anywhere else), and journal
    appends outside the writers of mlguild.rundir.records and mlguild.rundir.events."""
    names = {e.value for e in Event}
    found = []
    for where, tree in trees.items():
        if where == "core/vocabulary.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{where}:{node.lineno}: {node.value!r}")
        if where not in EVENT_WRITERS:
            found += [f"{where}:{c.lineno}: {name}" for c, name in _calls(tree) if name.endswith("journal.append")]
    return found


def test_journal_events_are_named_once():
    # Each event is an Event member written by one function (mlguild.rundir.records for a
    # node's, mlguild.rundir.events for the rest); readers compare ``type`` with the members.
    assert event_names_spelled(_trees()) == []


def test_the_event_check_finds_a_spelled_name_and_a_stray_append():
    source = (
        "def f(run, records):\n"
        "    run.journal.append(\n        Event.WATCHED, fingerprint={}\n    )\n"
        "    return [r for r in records if r['type'] == 'llm_call']\n"
    )
    assert event_names_spelled({"view/x.py": ast.parse(source)}) == [
        "view/x.py:5: 'llm_call'",
        "view/x.py:2: run.journal.append",
    ]


def meta_keys(trees: dict[str, ast.AST]) -> set[str]:
    """The keys of NodeMeta and of every TypedDict that extends it (a recipe node's meta, ...)."""
    classes = {n.name: n for tree in trees.values() for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    metas, grown = {"NodeMeta"}, True
    while grown:
        found = {name for name, c in classes.items() if any(ast.unparse(b) in metas for b in c.bases)}
        grown, metas = not found <= metas, metas | found
    return {
        item.target.id
        for name in metas
        for item in classes[name].body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    }


# A knowledge file's front matter is called meta too, and is no node's.
NOT_NODE_META = {"task/knowledge.py"}


def meta_reads_off_the_vocabulary(trees: dict[str, ast.AST]) -> list[str]:
    """Reads of a node's meta (``node.meta["k"]``, ``meta.get("k")``, ``.pop``, ``.setdefault``)
    by a key no NodeMeta declares: mypy checks a subscript's key, not a ``get``'s."""
    keys, found = meta_keys(trees), []
    for where, tree in trees.items():
        if where in NOT_NODE_META:
            continue
        for node in ast.walk(tree):
            target = key = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                target, key = node.value, node.slice.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
                if node.func.attr in ("get", "pop", "setdefault") and isinstance(node.args[0], ast.Constant):
                    target, key = node.func.value, node.args[0].value
            if target is None or not isinstance(key, str):
                continue
            name = ast.unparse(target)
            if (name == "meta" or name.endswith(".meta")) and key not in keys:
                found.append(f"{where}:{node.lineno}: {name}[{key!r}]")
    return found


def test_a_node_meta_is_read_by_the_keys_it_declares():
    # NodeMeta (mlguild.core.meta) lists what the harness reads of Node.meta; a recipe's meta
    # extends it. A key read but declared nowhere is a typo or a key that needs declaring.
    assert meta_reads_off_the_vocabulary(_trees()) == []


def test_the_meta_check_finds_an_undeclared_key():
    source = (
        "class NodeMeta(TypedDict, total=False):\n    seed: int\n\ndef f(node):\n    return node.meta.get('sede')\n"
    )
    assert meta_reads_off_the_vocabulary({"run/x.py": ast.parse(source)}) == ["run/x.py:5: node.meta['sede']"]
