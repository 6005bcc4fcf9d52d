"""A refit's agreement with its base node in the key conventions (issue 37): two ranked files
agree as their rows' places within their groups do, and key columns beside a row id are
copied columns, never compared as predictions."""

from __future__ import annotations

import pandas as pd
import pytest

from mlguild.run.refit import agreement


def test_two_ranked_files_agree_by_the_places_of_their_rows_in_their_groups():
    base = pd.DataFrame({"q": ["1", "1", "1", "2", "2", "2"], "item": ["a", "b", "c", "a", "d", "e"]})
    same_order_other_groups_first = pd.concat([base.iloc[3:], base.iloc[:3]])
    assert agreement("value", base, same_order_other_groups_first, "q", ["item"]) == pytest.approx(1.0)
    reversed_within = base.iloc[[2, 1, 0, 5, 4, 3]]
    assert agreement("value", base, reversed_within, "q", ["item"]) == pytest.approx(-1.0)


def test_key_columns_beside_a_row_id_are_not_compared_as_predictions():
    base = pd.DataFrame(
        {"id": ["1", "2", "3"], "user": ["u", "u", "v"], "video": ["a", "b", "a"], "s": [0.1, 0.5, 0.9]}
    )
    refit = base.assign(s=[0.2, 0.6, 0.8]).iloc[::-1]
    assert agreement("value", base, refit, "id", ["user", "video"], "user") == pytest.approx(1.0)
