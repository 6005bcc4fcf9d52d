"""The run's cache of embeddings: what a script computed from input files with a pretrained
backbone (never from labels), kept by the harness so later nodes and the refit skip the
backbone. Scripts read it read-only (``$MLGUILD_EMBEDDINGS``) and name the files they write.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

EMBEDDINGS = "embeddings"
EMBEDDINGS_ENV = "MLGUILD_EMBEDDINGS"
_EMBEDDING_MAX_BYTES = 2 << 30


def keep_embeddings(produced: Path, cache: Path) -> None:
    """Copy a node's ``output/embeddings/*.npy`` into the run's cache: plain files holding a
    2-d array of numbers only, none already there (the first node to embed a set of inputs is
    the one every later node reads). What a script does with the cache changes only its own
    features: scores come from sealed labels, and a script checks what it reads (a file that
    does not fit its inputs is recomputed)."""
    if not produced.is_dir() or produced.is_symlink():
        return
    cache.mkdir(exist_ok=True)
    for path in produced.glob("*.npy"):
        target = cache / path.name
        if path.is_symlink() or not path.is_file() or target.exists() or path.stat().st_size > _EMBEDDING_MAX_BYTES:
            continue
        if not _numeric_matrix(path):
            continue
        partial = target.with_suffix(".part")
        shutil.copyfile(path, partial)
        partial.replace(target)


def _numeric_matrix(path: Path) -> bool:
    """Whether ``path`` is a .npy file of a 2-d array of numbers (its header says so, and the
    file is as long as the header promises): no pickled objects, nothing cut short."""
    try:
        with path.open("rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                return False
            body = path.stat().st_size - f.tell()
    except (OSError, ValueError):
        return False
    return len(shape) == 2 and dtype.kind in "fiu" and body == int(np.prod(shape)) * dtype.itemsize
