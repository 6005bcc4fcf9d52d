"""Reading a CSV as the exact strings written: the firewall, the verifier, the scorer's helpers
and the final stage compare ids and labels as text, so "001" must stay "001" and "NA" stay "NA"."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.errors import TaskError


def read_csv_exact(path: Path, sep: str = ",", nrows: int | None = None) -> pd.DataFrame:
    """Read a CSV (its first ``nrows`` rows, or all) keeping every value as the exact string
    written ("001" stays "001", "NA" stays "NA")."""
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, index_col=False, sep=sep, nrows=nrows)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise TaskError(
            f"cannot read {path} as CSV: {exc}", f"check {path}: one header row, the same number of fields in every row"
        ) from exc
