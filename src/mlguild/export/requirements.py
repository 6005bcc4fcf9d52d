"""The packages a script imports, pinned to the versions installed here (which ran it)."""

from __future__ import annotations

import ast
import sys
from importlib import metadata

from ..util.pysource import parse


def imported_modules(code: str) -> set[str]:
    """The top-level modules ``code`` imports (absolute imports only; a script has no package)."""
    found: set[str] = set()
    for node in ast.walk(parse(code, "solution.py")):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def pinned_requirements(codes: list[str]) -> list[str]:
    """requirements.txt lines for the third-party modules ``codes`` import: each module's
    distribution at its installed version; a module installed nowhere here becomes a comment
    (the script would fail on it here too)."""
    modules = set().union(*(imported_modules(code) for code in codes)) - set(sys.stdlib_module_names)
    distributions = metadata.packages_distributions()
    lines: set[str] = set()
    missing: list[str] = []
    for module in sorted(modules):
        names = distributions.get(module)
        if not names:
            missing.append(module)
            continue
        for name in names:
            lines.add(f"{name}=={metadata.version(name)}")
    header = (
        f"# the packages the exported scripts import, as installed where they ran (Python {sys.version.split()[0]})"
    )
    return [header, *sorted(lines, key=str.lower), *(f"# not installed where it ran: {m}" for m in missing)]
