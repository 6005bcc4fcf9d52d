"""The copy finder judges all columns at once with the meaning of ``comparable`` column by
column: numbers as numbers ("1.0" equals "1"), anything else as exact text."""

from __future__ import annotations

import pandas as pd
import pytest

from mlguild.firewall import copies
from mlguild.firewall.copies import comparable, copied_columns

LABELS = {
    "numbers": ["1", "0", "1", "2.5", "0"],
    "words": ["yes", "no", "yes", "maybe", "no"],
    "mixed": ["1", "no", "1", "2", ""],
}
COLUMNS = {
    "same_text": lambda t: list(t),
    "as_floats": lambda t: [f"{float(v):.1f}" if _num(v) else v for v in t],
    "padded": lambda t: [v + " " for v in t],
    "one_differs": lambda t: [*t[:-1], "7"],
    "empty_cell": lambda t: [*t[:-1], ""],
    "na_word": lambda t: [*t[:-1], "NA"],
    "constant": lambda t: ["1"] * len(t),
    "upper": lambda t: [v.upper() for v in t],
}


def _num(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("label", sorted(LABELS))
@pytest.mark.parametrize("block_cells", [3, 2_000_000])  # one column a block, and all at once
def test_the_same_columns_as_comparable_column_by_column(label, block_cells, monkeypatch):
    monkeypatch.setattr(copies, "_BLOCK_CELLS", block_cells)
    truth = pd.Series(LABELS[label])
    frame = pd.DataFrame({name: make(truth.tolist()) for name, make in COLUMNS.items()}, dtype=str)
    frame["id"] = [str(i) for i in range(len(truth))]
    expected = [c for c in frame.columns if c != "id" and (comparable(frame[c]) == comparable(truth)).all()]
    assert copied_columns(frame, truth, skip={"id"}) == expected
    assert "same_text" in expected  # the check is not vacuous


def test_a_wide_table_finds_its_one_renamed_copy():
    import numpy as np

    rng = np.random.default_rng(0)
    values = rng.integers(0, 3, size=(40, 5000)).astype(str)
    frame = pd.DataFrame(values, columns=[f"f{i}" for i in range(5000)])
    truth = pd.Series(rng.integers(0, 3, size=40).astype(str))
    frame["f4321"] = truth.map(lambda v: v + ".0")
    assert copied_columns(frame, truth) == ["f4321"]
