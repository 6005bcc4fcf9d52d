"""Static checks on a script before it runs.

Two questions only: does it compile, and does it contain a path that reaches sealed data or
the run's journal? A name such as ``test`` in a dict is not a capability — only a path is —
and a false rejection costs an iteration and teaches the brain to avoid something harmless,
so nothing else is rejected here. The sandbox, not the guard, is what contains a script;
the guard exists so that an honest mistake (a path copied from a log) costs one clear
message instead of a run that reads labels it must not.

Paths are recognised as string constants, and as path expressions built from pieces
(``os.path.join(DATA, "..", "..", "sealed")``, ``DATA / ".." / "sealed"``, ``DATA + "/../x"``,
f-strings): the constant pieces after the last unknown piece are resolved against every
directory a script can start from (its node directory and the data directory).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

from ..core.vocabulary import FailureKind
from ..util import pysource

_JOIN_FUNCS = {"join", "Path", "PurePath", "PosixPath"}


@dataclass(frozen=True)
class GuardVerdict:
    ok: bool
    kind: FailureKind | None = None  # SYNTAX_ERROR or GUARD_REJECTED
    reason: str = ""


def _pieces(node: ast.AST) -> list[str | None] | None:
    """The pieces of a path expression, None for a piece whose value is unknown, or None
    when ``node`` is not a path expression at all."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
        left, right = _pieces(node.left), _pieces(node.right)
        left = left if left is not None else [None]
        right = right if right is not None else [None]
        if isinstance(node.op, ast.Add) and left[-1] is not None and right[0] is not None:
            return left[:-1] + [left[-1] + right[0]] + right[1:]  # "a" + "b": one piece
        return left + right
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in _JOIN_FUNCS and node.args:
            out: list[str | None] = []
            for arg in node.args:
                sub = _pieces(arg)
                out.extend(sub if sub is not None else [None])
            return out
    if isinstance(node, ast.JoinedStr):
        text: list[str | None] = [""]
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                text[-1] = (text[-1] or "") + value.value
            else:
                text += [None, ""]
        return text
    return None


def _tail(pieces: list[str | None]) -> tuple[bool, str] | None:
    """(starts from a known place, the constant path after the last unknown piece)."""
    known: list[str] = []
    anchored = True
    for piece in pieces:
        if piece is None:
            known, anchored = [], False
        else:
            known.append(piece)
    # After an unknown piece (a directory), "/../x" continues from it: it is not absolute.
    parts = [p.strip("/") if (i or not anchored) else p.rstrip("/") or "/" for i, p in enumerate(known) if p]
    text = "/".join(parts).replace("//", "/")
    return (anchored, text) if text else None


def _reaches(text: str, bases: list[Path], forbidden: list[Path]) -> Path | None:
    if len(text) > 4096 or "\n" in text or "\x00" in text:
        return None
    for base in bases:
        candidate = Path(os.path.normpath(base / os.path.expanduser(text)))
        for target in forbidden:
            if candidate == target or target in candidate.parents:
                return target
    return None


def check_code(code: str, node_dir: Path, forbidden: list[Path], data_dir: Path | None = None) -> GuardVerdict:
    """Compile ``code`` and look for path expressions that resolve into a forbidden path.

    Relative paths are resolved against ``node_dir`` (the script's working directory) and
    ``data_dir``; a path built on an unknown value (``DATA / "../../sealed"``) is resolved
    against both too, since that is where an unknown base points in practice.
    """
    try:
        tree = pysource.parse(code, filename="solution.py")
        pysource.compile_module(tree, "solution.py")
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else "unknown line"
        return GuardVerdict(False, FailureKind.SYNTAX_ERROR, f"SyntaxError at {where}: {exc.msg}")
    except ValueError as exc:  # e.g. null bytes
        return GuardVerdict(False, FailureKind.SYNTAX_ERROR, f"cannot compile: {exc}")

    forbidden = [Path(os.path.normpath(p)) for p in forbidden]
    bases = [Path(node_dir)] + ([Path(data_dir)] if data_dir else [])
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr):  # only an expression is a path expression (_pieces)
            continue
        pieces = _pieces(node)
        found = _tail(pieces) if pieces else None
        if found is None:
            continue
        _, text = found
        hit = _reaches(text, bases, forbidden)
        if hit is not None:
            return GuardVerdict(
                False,
                FailureKind.GUARD_REJECTED,
                f"line {node.lineno}: the path {text!r} reaches {hit.name}, which scripts may not read; "
                "read inputs only from the MLGUILD_DATA directory and write only under output/",
            )
    return GuardVerdict(True)
