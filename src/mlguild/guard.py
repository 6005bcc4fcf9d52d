"""Static checks on a script before it runs.

Two questions only: does it compile, and does it contain a path that reaches sealed data or
the run's journal? A name such as ``test`` in a dict is not a capability — only a path is —
and a false rejection costs an iteration and teaches the brain to avoid something harmless,
so nothing else is rejected here. The sandbox, not the guard, is what contains a script.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GuardVerdict:
    ok: bool
    kind: str | None = None       # "syntax_error" or "guard_rejected"
    reason: str = ""


def _resolves_into(text: str, node_dir: Path, forbidden: list[Path]) -> Path | None:
    if not text or len(text) > 4096 or "\n" in text or "\x00" in text:
        return None
    candidate = Path(os.path.normpath(node_dir / os.path.expanduser(text)))
    for target in forbidden:
        if candidate == target or target in candidate.parents:
            return target
    return None


def check_code(code: str, node_dir: Path, forbidden: list[Path]) -> GuardVerdict:
    """Compile ``code`` and look for string constants that resolve into a forbidden path.

    Paths are resolved relative to ``node_dir`` (the script's working directory), so both
    absolute paths and ``../../sealed`` forms are caught.
    """
    try:
        tree = ast.parse(code, filename="solution.py")
        compile(tree, "solution.py", "exec")
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else "unknown line"
        return GuardVerdict(False, "syntax_error", f"SyntaxError at {where}: {exc.msg}")
    except ValueError as exc:  # e.g. null bytes
        return GuardVerdict(False, "syntax_error", f"cannot compile: {exc}")

    forbidden = [Path(os.path.normpath(p)) for p in forbidden]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            hit = _resolves_into(node.value, node_dir, forbidden)
            if hit is not None:
                return GuardVerdict(
                    False,
                    "guard_rejected",
                    f"line {node.lineno}: the path {node.value!r} reaches {hit.name}, which scripts may not read; "
                    "read inputs only from the MLGUILD_DATA directory",
                )
    return GuardVerdict(True)
