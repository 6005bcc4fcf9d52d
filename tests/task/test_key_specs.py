"""Every key convention written by hand in task.yaml (issue 37, item 1): a row id beside group
and item columns (``group_column``), (group, item) keys with no row id, a ranked file
(``ranked_file: true``), keys that repeat and a mean of metrics; each loads, and the firewall
seals whole groups. A task.yaml that contradicts itself or its files is one clear line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mlguild.config import load_config
from mlguild.core.errors import TaskError
from mlguild.rundir.folder import create_run
from mlguild.task.folder import load_task


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [
        {"user": f"u{u}", "video": f"v{rng.integers(0, 6)}", "length": round(float(rng.uniform(1, 9)), 3)}
        for u in range(50)
        for _ in range(5)
    ]
    frame = pd.DataFrame(rows)
    frame.insert(0, "id", [f"r{i}" for i in range(len(frame))])
    frame["watched"] = (frame["length"] > 5).astype(int)
    return frame


SPECS = {
    "row id, group and item": dict(
        metric="mean(gauc, ndcg@5)", id_column="id", group_column="user", key_columns=["user", "video"],
        submission_columns=["id", "user", "video", "score"],
    ),
    "(group, item) keys": dict(
        metric="gauc", id_column="user", ids_unique=False, key_columns=["video"],
        submission_columns=["user", "video", "score"],
    ),
    "ranked file": dict(
        metric="ndcg_at_k", metric_params={"k": 3}, id_column="user", ids_unique=False, key_columns=["video"],
        submission_columns=["user", "video"], ranked_file=True,
    ),
    "ranked file with a row id": dict(
        metric="gauc", id_column="id", group_column="user", key_columns=["user", "video"],
        submission_columns=["id", "user", "video"], ranked_file=True,
    ),
}  # fmt: skip


def _task(root: Path, spec: dict, frame: pd.DataFrame | None = None) -> Path:
    frame = _frame() if frame is None else frame
    public = root / "public"
    public.mkdir(parents=True)
    test_users = {f"u{u}" for u in range(10)}
    test = frame[frame["user"].isin(test_users)]
    frame[~frame["user"].isin(test_users)].to_csv(public / "train.csv", index=False)
    test.drop(columns=["watched"]).to_csv(public / "test.csv", index=False)
    sample = test[[c for c in spec["submission_columns"] if c in test.columns]]
    if "score" in spec["submission_columns"]:
        sample = sample.assign(score=0.0)
    sample.to_csv(public / "sample_submission.csv", index=False)
    full = dict(name="videos", task_type="ranking", target_columns=["watched"], positive_label="1", answers_file=None)
    (root / "task.yaml").write_text(yaml.safe_dump({**full, **spec}, sort_keys=False))
    (root / "description.md").write_text("# videos\n")
    return root


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_key_convention_written_by_hand_loads_and_the_firewall_seals_whole_groups(tmp_path, name):
    frame = _frame()
    assert frame.duplicated(["user", "video"]).any()  # keys that repeat, in every convention
    task = load_task(_task(tmp_path / "task", SPECS[name], frame))
    assert task.spec.group_key == "user"
    run = create_run(task, load_config(None, []), tmp_path / "runs")
    try:
        train = pd.read_csv(run.workspace.data_dir / "train.csv", dtype=str)
        held = pd.read_csv(run.workspace.holdout_answers, dtype=str)
        assert len(held) and not set(held["user"]) & set(train["user"])  # no user on both sides
        sizes = frame.groupby("user").size()
        assert (held.groupby("user").size() == sizes.loc[held["user"].unique()]).all()  # whole groups
        assert list(held.columns) == list(dict.fromkeys([task.spec.id_column, *task.spec.key_columns, "watched"]))
    finally:
        run.close()


def _bad(tmp_path: Path, **change) -> str:
    spec = {**SPECS["row id, group and item"], **change}
    with pytest.raises(TaskError) as err:
        load_task(_task(tmp_path / "bad", spec))
    text = str(err.value.args[0])
    assert "\n" not in text, text
    return text + " | " + err.value.fix


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (dict(group_column="session"), "group_column 'session' must be one of key_columns"),
        (dict(group_column=None), "metric mean(gauc, ndcg_at_k@5) scores within groups, but no column names them"),
        (dict(ranked_file=True), "ranked_file: true means no score column, but submission_columns has ['score']"),
        (dict(metric="rmse", ranked_file=True, submission_columns=["id", "user", "video"]), "ranked_file: true needs"),
        (dict(metric="mean(gauc, rmse)"), "do not share a direction"),
    ],
)
def test_a_hand_written_spec_that_contradicts_itself_is_one_clear_line(tmp_path, change, words):
    assert words in _bad(tmp_path, **change)


def test_a_hand_written_spec_whose_key_column_is_not_in_the_files_names_the_fix(tmp_path):
    root = _task(tmp_path / "task", SPECS["row id, group and item"])
    for name in ("train.csv", "test.csv"):
        path = root / "public" / name
        pd.read_csv(path, dtype=str).rename(columns={"user": "person"}).to_csv(path, index=False)
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert "has no key column(s) ['user']" in str(err.value) and "group_column/key_columns" in err.value.fix
