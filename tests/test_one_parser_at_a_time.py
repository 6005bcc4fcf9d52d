"""CPython 3.11's parser is not safe to call from several threads at once (``SystemError: AST
constructor recursion depth mismatch``, seen when one worker's sandbox read its event lines with
``ast.literal_eval`` while another worker's guard parsed its script). Every parse in mlguild's
own code goes through ``mlguild.util.pysource``'s lock: this reads the source tree for a call
that does not."""

from __future__ import annotations

import re
from pathlib import Path

import mlguild
from mlguild.util import pysource

SOURCE = Path(mlguild.__file__).parent
UNLOCKED = re.compile(r"\bast\.(parse|literal_eval|unparse)\(|(?<![\w.])compile\(")


def test_every_parse_goes_through_the_lock():
    found = [
        f"{path.relative_to(SOURCE)}:{n}: {line.strip()}"
        for path in sorted(SOURCE.rglob("*.py"))
        if path.name != "pysource.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if UNLOCKED.search(line) and not line.lstrip().startswith("#")
    ]
    assert not found, found


def test_the_locked_calls_parse_as_the_ast_module_does():
    assert pysource.literal_eval("{'event': 'exit', 'code': 0}") == {"event": "exit", "code": 0}
    assert pysource.unparse(pysource.parse("x = 1")) == "x = 1"
