"""A ranked file: a submission with no score column, whose order is the ranking (each group's
rows best first, as Expedia's hotel ranking asks). The scorer turns a row's place among its
group's rows into a score, after matching the rows to the answers by their keys."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mlguild.scoring.strict_csv import fail, preview
from mlguild.scoring.submission import SubmissionFormat


def row_keys(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """One string per row: its key columns and its place among the rows with the same keys
    (a (group, item) pair that repeats is told apart by the order of its rows)."""
    joined = frame[columns].astype(str).agg("\x1f".join, axis=1) if len(frame) else pd.Series([], dtype=str)
    occurrence = joined.groupby(joined.to_numpy(), sort=False).cumcount().astype(str)
    return (joined + "\x1f" + occurrence).to_numpy()


def ranked_scores(sub: pd.DataFrame, answers: pd.DataFrame, fmt: SubmissionFormat) -> np.ndarray:
    """For each answer row, minus its place among its group's rows in the file ``sub`` (file
    order): the score of a ranked file, whose first row of a group ranks first. Rows match the
    answers by the id and key columns; a row whose keys are not expected is ``key_mismatch``."""
    columns = list(dict.fromkeys([fmt.id_column, *fmt.key_columns]))
    group = fmt.group_column or fmt.id_column
    place = sub.groupby(sub[group].to_numpy(), sort=False).cumcount().to_numpy()
    file_keys, want_keys = row_keys(sub, columns), row_keys(answers, columns)
    codes = pd.factorize(np.concatenate([want_keys, file_keys]))[0]
    n = len(want_keys)
    where = codes[n:]
    if len(where) != n or (where >= n).any() or len(np.unique(where)) != n:
        bad = int(np.argmax(where >= n)) if (where >= n).any() else 0
        shown = ", ".join(f"{c} {preview(sub[c].iat[bad])}" for c in columns)
        raise fail(
            "key_mismatch",
            f"row {sub.index[bad]} has {shown}, which is not a row of its group in the sample submission; "
            "a ranked file lists the sample submission's rows, each group's best first",
        )
    scores = np.empty(n, dtype=np.float64)
    scores[where] = -place.astype(np.float64)
    return scores
