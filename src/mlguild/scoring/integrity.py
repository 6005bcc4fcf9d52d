"""The scorer's integrity: a fingerprint of the files whose code decides a score.

A run takes the fingerprint when it starts and every ``Scorer`` checks it before each use, so
a script that rewrote the judge's code (the package a run imported) cannot improve its own
score: the next score fails with ``ScorerIntegrityError``, and the node path blames the node
that ran when the files changed (mlguild.run.node).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from mlguild.core.errors import ScorerIntegrityError

PACKAGE_DIR = Path(__file__).resolve().parents[1]

# The judge's own files, relative to the package: the scorer, what it reads and validates with,
# this check, and every metric module (all of metrics/, so a new metric is covered the day it
# is added), and the score type.
_SCORING = ("scorer.py", "integrity.py", "submission.py", "ranked.py", "resample.py", "scored_rows.py", "strict_csv.py")
SOURCES = (
    *(f"scoring/{name}" for name in _SCORING),
    *sorted(f"metrics/{p.name}" for p in (PACKAGE_DIR / "metrics").glob("*.py")),
    "core/score.py",
)


def fingerprint() -> str:
    """SHA-256 over the scorer's own source files (``SOURCES``)."""
    h = hashlib.sha256()
    for name in SOURCES:
        h.update(name.encode() + b"\0" + (PACKAGE_DIR / name).read_bytes() + b"\0")
    return h.hexdigest()


def check_fingerprint(expected: str) -> None:
    """Raise ScorerIntegrityError if the scorer's files changed since ``expected`` was taken."""
    got = fingerprint()
    if got != expected:
        raise ScorerIntegrityError(
            f"the scorer's source changed during the run (fingerprint {got[:12]} != {expected[:12]})",
            fix=f"restore {', '.join(SOURCES)} in src/mlguild (e.g. `git checkout src/mlguild`), or start a new run",
        )
