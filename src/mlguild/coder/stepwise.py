"""Stepwise generation: a script written in parts (data, features, model, train, predict)
and assembled into one file.

Each part is written by a separate request and repeats the imports it needs, so assembly
hoists every top-level import to the top of the file, once. Imports nested in a ``try``, an
``if`` or a function stay where they are: they are conditional on purpose.
"""

from __future__ import annotations

import ast
import re

from ..util import pysource

STEP_ORDER = ("data", "features", "model", "train", "predict")
_HEADER = "# " + "=" * 20 + " {name} " + "=" * 20
_IMPORT_LINE = re.compile(r"^(?:import [\w., ]+|from [\w.]+ import [\w., *]+)(?:\s+as \w+)?\s*(?:#.*)?$")


def _split_imports(code: str) -> tuple[list[str], str]:
    """(the part's top-level import statements, normalised to one line each; the rest)."""
    try:
        tree = pysource.parse(code)
    except SyntaxError:
        # Keep going with single-line imports only: the assembled script will fail to compile
        # anyway, and the guard names the line; hoisting must not hide which part broke.
        lines = code.split("\n")
        imports: list[str] = [line.strip() for line in lines if _IMPORT_LINE.match(line)]
        rest = [line for line in lines if not _IMPORT_LINE.match(line)]
        return imports, "\n".join(rest)
    lines = code.split("\n")
    drop: set[int] = set()
    imports = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(pysource.unparse(stmt))
            drop.update(range(stmt.lineno - 1, (stmt.end_lineno or stmt.lineno)))
    rest = [line for i, line in enumerate(lines) if i not in drop]
    return imports, "\n".join(rest)


def assemble_parts(parts: dict[str, str]) -> str:
    """One script from named parts, in ``STEP_ORDER``, each under a comment header naming it.

    Missing or blank parts are skipped. Top-level imports of every part are hoisted to the top
    and deduplicated (identical statements once, ``from __future__`` first, otherwise in the
    order first seen). Raises ValueError for a part name not in ``STEP_ORDER``: a misnamed
    part silently placed out of order would run before the code it depends on.
    """
    unknown = sorted(set(parts) - set(STEP_ORDER))
    if unknown:
        raise ValueError(f"unknown script part(s) {unknown}; expected names from {list(STEP_ORDER)}")
    future: list[str] = []
    imports: list[str] = []
    sections: list[str] = []
    for name in STEP_ORDER:
        code = (parts.get(name) or "").replace("\r\n", "\n")
        if not code.strip():
            continue
        found, rest = _split_imports(code)
        for stmt in found:
            target = future if stmt.startswith("from __future__") else imports
            if stmt not in target:
                target.append(stmt)
        body = re.sub(r"\n{3,}", "\n\n", rest).strip("\n")
        sections.append(_HEADER.format(name=name) + ("\n" + body if body.strip() else ""))
    head = "\n".join(future + imports)
    return "\n\n".join(p for p in [head] + sections if p) + "\n"
