"""Which column orders a task's rows in time: dates are read robustly (ISO dates, datetimes
with zones, year-month), and a column with a value that is not a date is simply not a time
column, never a crash."""

from __future__ import annotations

import pandas as pd
import pytest

from mlguild.task.time_order import infer_time_column, parse_times, time_orders


@pytest.mark.parametrize(
    "values",
    [
        ["2020-01-31", "2020-02-01", "2021-12-24"],
        ["2020-01-31 08:15:00", "2020-01-31T09:00:00Z", "2020-02-01 10:00+02:00"],
        ["2020-01", "2020-02", "2021-11"],
        ["03/15/2020", "03/16/2020", "04/01/2020"],
    ],
)
def test_dates_and_timestamps_are_read_as_times(values):
    times = parse_times(pd.Series(values * 5, name="when"))
    assert times is not None and times.notna().all()
    assert times.iloc[0] < times.iloc[2]


@pytest.mark.parametrize(
    "values",
    [
        ["2020-01-31", "soon", "2021-12-24"],  # one word among dates
        ["2020-01-31", "", "2021-12-24"],  # an empty cell: its side of a cut is unknown
        ["2020-13-45", "2020-02-01", "2020-02-02"],  # not a date at all
        ["1", "2", "3"],  # numbers
        ["May", "June", "July"],  # words that pandas would read as dates
        ["a1", "b2", "c3"],
    ],
)
def test_a_column_with_any_value_that_is_not_a_date_is_not_a_time_column(values):
    assert parse_times(pd.Series(values * 5, name="when")) is None


def test_a_time_column_is_one_in_which_the_test_rows_come_after_the_train_rows():
    train = pd.DataFrame(
        {
            "id": ["1", "2", "3", "4"],
            "signup": ["2019-05-01", "2018-01-01", "2019-02-01", "2017-03-03"],  # ordered, but test has earlier
            "visit_date": ["2020-01-03", "2020-01-01", "2020-01-02", "2020-01-02"],
            "y": ["1", "0", "1", "0"],
        }
    )
    test = pd.DataFrame(
        {"id": ["5", "6"], "signup": ["2016-01-01", "2019-09-09"], "visit_date": ["2020-01-03", "2020-01-09"]}
    )
    column, notes = infer_time_column(train, test, ["id", "y"])
    assert column == "visit_date"  # ties with the latest train day count as after
    assert "every test row (2020-01-03 to 2020-01-09) comes at or after the latest train row (2020-01-03)" in notes[0]
    assert [o.column for o in time_orders(train, test.assign(visit_date=["2019-12-31", "2020-01-09"]))] == []
    assert infer_time_column(train.assign(visit_date="2020-01-01"), test, ["id", "y"])[0] is None  # one time only
