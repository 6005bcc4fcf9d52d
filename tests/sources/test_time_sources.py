"""The time column of a task, from its sources: inferred from a competition folder with no
task.yaml and by `init csv:` when the test rows come after the train rows in a date column,
named with --time-column (a single CSV is then split by time), each decision said as a note."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import as_competition_folder, mlguild, one_line

from mlguild.core.errors import TaskError
from mlguild.sources.csv_source import build_from_csv
from mlguild.sources.examples import build_example
from mlguild.sources.infer import infer_task
from mlguild.task.folder import load_task


@pytest.fixture(scope="module")
def ridership(tmp_path_factory):
    return build_example("ridership", tmp_path_factory.mktemp("examples") / "ridership")


def test_the_ridership_example_is_split_by_time(ridership):
    train = pd.read_csv(ridership / "public" / "train.csv")
    test = pd.read_csv(ridership / "public" / "test.csv")
    assert load_task(ridership).spec.time_column == "date"
    assert train["date"].max() < test["date"].min()  # the test days are the latest 20%
    assert abs(len(test) - 0.2 * (len(train) + len(test))) <= 1


@pytest.mark.parametrize("layout", ["mle", "flat"])
def test_a_competition_folder_without_task_yaml_gets_its_time_column_inferred(ridership, tmp_path, layout):
    inferred = infer_task(as_competition_folder(ridership, tmp_path / "comp", layout))
    assert inferred.spec.time_column == "date"
    note = next(n for n in inferred.notes if n.startswith("time column 'date'"))
    assert "comes at or after the latest train row (2013-07-15)" in note and "set it to null" in note


def _dated(n: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "when": pd.date_range("2021-03-01", periods=n, freq="D").strftime("%Y-%m-%d"),
            "born": pd.date_range("1990-01-01", periods=n, freq="W").strftime("%Y-%m-%d")[::-1],
            "x": rng.normal(size=n).round(4),
        }
    )
    frame["sales"] = (frame["x"] * 3 + np.arange(n) / 20).round(3)
    return frame.sample(frac=1.0, random_state=2).reset_index(drop=True)  # not in time order in the file


def test_init_csv_infers_the_time_column_from_a_later_test_file(tmp_path):
    frame = _dated()
    late = frame["when"] >= "2021-06-01"
    frame[~late].to_csv(tmp_path / "train.csv", index=False)
    frame[late].drop(columns=["sales"]).to_csv(tmp_path / "test.csv", index=False)
    said: list[str] = []
    task = build_from_csv(
        tmp_path / "train.csv", tmp_path / "task", target="sales", test=tmp_path / "test.csv", say=said.append
    )
    assert yaml.safe_load((task / "task.yaml").read_text())["time_column"] == "when"
    assert said and said[0].startswith("time column 'when'")  # 'born' runs backwards: not a time order


def test_init_csv_of_one_file_splits_by_time_only_when_told(tmp_path):
    _dated().to_csv(tmp_path / "all.csv", index=False)
    said: list[str] = []
    plain = build_from_csv(tmp_path / "all.csv", tmp_path / "plain", target="sales", say=said.append)
    assert load_task(plain).spec.time_column is None
    assert any("pass --time-column when" in n for n in said)  # pointed out, not guessed

    timed = build_from_csv(tmp_path / "all.csv", tmp_path / "timed", target="sales", time_column="when")
    train = pd.read_csv(timed / "public" / "train.csv")
    test = pd.read_csv(timed / "public" / "test.csv")
    assert load_task(timed).spec.time_column == "when"
    assert len(test) == 24 and train["when"].max() < test["when"].min()


def test_a_time_column_that_is_not_dates_is_refused_by_init(tmp_path):
    frame = _dated()
    frame.loc[5, "when"] = "last tuesday"
    frame.to_csv(tmp_path / "all.csv", index=False)
    with pytest.raises(TaskError, match="not dates") as info:
        build_from_csv(tmp_path / "all.csv", tmp_path / "t", target="sales", time_column="when")
    assert "fill or remove those rows" in info.value.fix
    with pytest.raises(TaskError, match="is not a column") as info:
        build_from_csv(tmp_path / "all.csv", tmp_path / "t", target="sales", time_column="wen")
    assert "did you mean 'when'" in str(info.value)


def test_init_csv_time_column_on_the_command_line(tmp_path):
    _dated().to_csv(tmp_path / "all.csv", index=False)
    done = mlguild(
        "init", f"csv:{tmp_path / 'all.csv'}", "--target", "sales", "--time-column", "when", "--out", "t", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "time column 'when' (--time-column): the test set is the latest 20% of the rows" in one_line(done.stdout)
