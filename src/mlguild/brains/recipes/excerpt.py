"""An excerpt of a module's source: the functions a script needs and what they depend on.

Scripts carry the column parsers as code (they must run without mlguild), but a script
whose columns are all numbers should not carry the date and list parsers. The excerpt
keeps the module's top-level statements that the wanted names reach, in source order,
each with the comment block written right above it, and the imports they use.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from ...util import pysource


@lru_cache(maxsize=32)
def excerpt(source: str, wanted: frozenset[str]) -> str:
    """The top-level statements of ``source`` that define ``wanted`` names or names those
    use (transitively), plus the imports they use; the module docstring is left out."""
    tree = pysource.parse(source)
    lines = source.splitlines()
    body = [node for node in tree.body if not _is_docstring(node)]
    defines = {node: _defined(node) for node in body}
    keep: set[ast.stmt] = set()
    todo = set(wanted)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        seen.add(name)
        for node, names in defines.items():
            if name in names and node not in keep:
                keep.add(node)
                todo |= _used(node) - seen
    parts = []
    for node in body:
        if node in keep:
            start = node.lineno - 1
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                start -= 1
            blank = "\n\n" if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ""
            parts.append(blank + "\n".join(lines[start : node.end_lineno]) + blank)
    return "\n".join(parts).strip() + "\n"


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _defined(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _used(node: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - _defined(node)
