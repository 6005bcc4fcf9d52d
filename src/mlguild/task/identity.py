"""A task's identity across runs: its data, not its folder name.

Earlier runs of "the same task" (the guild, the memory's priors, the recipe brain's warm start)
are those whose training file has the same fingerprint: a hash of its header line, its size in
bytes and a seeded sample of its lines. Two different tasks in folders of the same name (every
downloaded competition in a folder called ``task``) never share earlier runs; the same data
under another folder name still does. Reading a sample, not the whole file, keeps this cheap on
files of gigabytes; a change to the data shows in the size or the header, or, with a rewrite
of the same size, almost surely in one of the sampled lines.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

SAMPLE_LINES = 64  # lines read at seeded offsets
_SEED = 37


def data_fingerprint(train_path: Path) -> str:
    """The hex fingerprint of a training file: header, size and a seeded sample of lines (the
    offsets depend on the size only, so the same file always reads the same lines)."""
    digest = hashlib.sha256()
    size = train_path.stat().st_size
    with train_path.open("rb") as f:
        header = f.readline()
        digest.update(header)
        digest.update(str(size).encode())
        rng = random.Random(f"{_SEED}:{size}")
        if size > len(header):
            for offset in sorted(rng.randrange(len(header), size) for _ in range(SAMPLE_LINES)):
                f.seek(offset)
                f.readline()  # the rest of the line the offset fell in
                digest.update(f.readline())
    return digest.hexdigest()


def task_key(name: str, fingerprint: str | None) -> str:
    """The name the memory and the guild file a task's records under: its data's fingerprint
    (``data#`` and 12 hex digits), whatever its folder or task name; the name alone for a run
    made before fingerprints (whose records keep matching the old records of that name)."""
    return f"data#{fingerprint[:12]}" if fingerprint else name
