"""Parsing and compiling script code, one call at a time in the whole process.

CPython 3.11's parser is not safe to call from several threads at once: two workers guarding
their scripts together failed with ``SystemError: AST constructor recursion depth mismatch``
from ``ast.parse``. Every parse or compile of script code in mlguild goes through this lock
(a parse takes milliseconds; a worker spends seconds to minutes on its script).
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

_LOCK = threading.Lock()


def parse(code: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(code)``, serialised."""
    with _LOCK:
        return ast.parse(code, filename=filename)


def compile_module(source: str | ast.Module, filename: str) -> CodeType:
    """``compile(source, filename, "exec", dont_inherit=True)``, serialised."""
    with _LOCK:
        return compile(source, filename, "exec", dont_inherit=True)


def literal_eval(text: str) -> object:
    """``ast.literal_eval(text)``, serialised: it parses too (the sandbox reads its supervisor's
    event lines with it in every worker's thread, beside another worker's guard)."""
    with _LOCK:
        return ast.literal_eval(text)


def unparse(node: ast.AST) -> str:
    """``ast.unparse(node)``, serialised with the parser (it shares its state)."""
    with _LOCK:
        return ast.unparse(node)
