"""The rows a metric scores: every row, or those whose input columns hold given values
(``metric_params.scored_rows``: a grader that scores ventilator pressure only where ``u_out`` is 0)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def scored_only(y_true: Any, y_pred: Any, params: dict, answers: pd.DataFrame) -> tuple[Any, Any, dict]:
    """The rows the metric scores: all of them, or with ``params["scored_rows"]`` ({column:
    value}) those whose input columns in ``answers`` hold the values (a grader that scores
    ventilator pressure only where ``u_out`` is 0). Each row's group goes with it."""
    wanted = params.pop("scored_rows", None)
    if not wanted:
        return y_true, y_pred, params
    keep = np.ones(len(answers), dtype=bool)
    for column, value in wanted.items():
        if column not in answers.columns:
            raise ValueError(f"the column {column!r} that picks the scored rows is not in the answers")
        keep &= holds_value(answers[column], value)
    if not keep.any():
        raise ValueError(f"no row holds the values of the scored rows {wanted}")
    if "groups" in params:
        params["groups"] = np.asarray(params["groups"])[keep]
    return _rows(y_true, keep), _rows(y_pred, keep), params


def holds_value(column: pd.Series, value: object) -> np.ndarray:
    """Which of a string column's cells hold ``value``: as numbers where the value is one
    (``0`` matches ``0``, ``0.0`` and ``0e0``), a truth value as true/false or 1/0, else as text."""
    if isinstance(value, bool):
        return column.astype(str).str.strip().str.lower().isin(["true", "1"] if value else ["false", "0"]).to_numpy()
    if isinstance(value, (int, float)):
        return (pd.to_numeric(column, errors="coerce") == float(value)).to_numpy()
    return (column.astype(str).str.strip() == str(value).strip()).to_numpy()


def _rows(values: Any, keep: np.ndarray) -> Any:
    """``values`` (an array, or a list of ranked lists or label sets) at the kept rows."""
    if isinstance(values, np.ndarray):
        return values[keep]
    return [v for v, k in zip(values, keep) if k]
