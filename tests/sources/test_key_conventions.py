"""Every key convention a ranking competition ships, inferred from a folder with no task.yaml
(issue 37, item 1): a row id beside group and item columns (the within-user ranking's
``id,user,video,score``, whose (user, video) pairs repeat), (group, item) keys with no row id,
a ranked file with no score column (Expedia's ``srch_id,prop_id``, each search's hotels best
first), keys that repeat, and the mean of GAUC and nDCG@5. Each folder is tiny and synthetic,
written here with the real competitions' shapes; an ambiguous one is refused in one line that
names the task.yaml line that settles it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import mlguild, one_line

from mlguild.core.errors import TaskError
from mlguild.sources.convert_folder import write_inferred
from mlguild.sources.infer import infer_task
from mlguild.task.folder import load_task

GAUC_AND_NDCG = "# Within-user ranking\n## Evaluation\nThe score is the mean of GAUC and nDCG@5, computed per user.\n"


def _impressions(n_users: int = 40, seed: int = 0) -> pd.DataFrame:
    """Users shown videos, some more than once (so (user, video) pairs repeat), and whether
    they watched: a row id per impression."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_users):
        for _ in range(6):
            video = f"v{rng.integers(0, 8)}"  # 6 draws of 8 videos: repeats within a user
            rows.append({"user": f"u{u}", "video": video, "length": float(rng.uniform(1, 9))})
    frame = pd.DataFrame(rows)
    frame.insert(0, "id", [f"r{i}" for i in range(len(frame))])
    frame["watched"] = (frame["length"] + rng.normal(0, 2, len(frame)) > 5).astype(int)
    return frame


def _folder(root: Path, train: pd.DataFrame, test: pd.DataFrame, sample: pd.DataFrame, description: str) -> Path:
    root.mkdir(parents=True)
    train.to_csv(root / "train.csv", index=False)
    test.to_csv(root / "test.csv", index=False)
    sample.to_csv(root / "sample_submission.csv", index=False)
    (root / "description.md").write_text(description)
    return root


def _row_id_folder(root: Path, columns=("user", "video"), description: str = GAUC_AND_NDCG) -> Path:
    frame = _impressions().rename(columns=dict(zip(("user", "video"), columns)))
    test = frame.iloc[:60]
    sample = test[["id", *columns]].assign(score=0.5)
    return _folder(root, frame.iloc[60:], test.drop(columns=["watched"]), sample, description)


def test_a_row_id_beside_group_and_item_columns_is_a_grouped_ranking_within_the_group(tmp_path):
    folder = _row_id_folder(tmp_path / "videos")
    assert folder.joinpath("sample_submission.csv").read_text().startswith("id,user,video,score")
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.task_type, spec.id_column, spec.ids_unique, spec.group_column) == ("ranking", "id", True, "user")
    assert (spec.key_columns, spec.target_columns, spec.prediction_columns) == (
        ["user", "video"],
        ["watched"],
        ["score"],
    )
    assert spec.metric == "mean(gauc, ndcg_at_k@5)" and spec.metric_direction == "maximize"
    assert not spec.ranked_file and spec.group_key == "user"
    assert any("within 'user'" in note for note in inferred.notes), inferred.notes
    # What inference writes is a task.yaml that loads (and says the same) as a hand-written one would.
    write_inferred(inferred)
    assert load_task(folder).spec.group_column == "user"


def test_group_and_item_columns_of_no_telling_name_are_refused_naming_group_column(tmp_path):
    folder = _row_id_folder(tmp_path / "anon", columns=("a", "b"))
    with pytest.raises(TaskError) as err:
        infer_task(folder)
    assert "group_column: COLUMN" in err.value.fix and "'a', 'b'" in err.value.fix
    assert "\n" not in str(err.value.args[0])


def test_copied_columns_beside_a_row_id_with_a_metric_of_single_rows_are_keys_not_groups(tmp_path):
    folder = _row_id_folder(tmp_path / "flat", description="## Evaluation\nArea under the ROC curve.\n")
    spec = infer_task(folder).spec
    assert (spec.task_type, spec.metric, spec.group_column, spec.ids_unique) == ("binary", "roc_auc", None, True)
    assert spec.key_columns == ["user", "video"] and spec.prediction_columns == ["score"]


def test_group_and_item_keys_with_no_row_id_and_repeated_pairs_are_a_ranking_within_the_id(tmp_path):
    frame = _impressions().drop(columns=["id"])
    assert frame.duplicated(["user", "video"]).any()  # keys that repeat
    test = frame.iloc[:60]
    sample = test[["user", "video"]].assign(score=0.0)
    folder = _folder(tmp_path / "pairs", frame.iloc[60:], test.drop(columns=["watched"]), sample, GAUC_AND_NDCG)
    spec = infer_task(folder).spec
    assert (spec.id_column, spec.ids_unique, spec.group_column, spec.key_columns) == ("user", False, None, ["video"])
    assert spec.group_key == "user" and spec.prediction_columns == ["score"]


def test_repeated_ids_that_name_the_item_rank_within_the_column_named_for_groups(tmp_path):
    frame = _impressions().drop(columns=["id"])[["video", "user", "length", "watched"]]
    test = frame.iloc[:60]
    sample = test[["video", "user"]].assign(score=0.0)
    folder = _folder(tmp_path / "by_video", frame.iloc[60:], test.drop(columns=["watched"]), sample, GAUC_AND_NDCG)
    spec = infer_task(folder).spec
    assert (spec.id_column, spec.ids_unique, spec.group_column, spec.group_key) == ("video", False, "user", "user")


def _searches(n: int = 30, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [
        {"srch_id": str(s), "prop_id": str(p), "price": float(rng.uniform(50, 300)), "relevance": 0}
        for s in range(n)
        for p in rng.choice(100, 5, replace=False)
    ]
    frame = pd.DataFrame(rows)
    frame.loc[frame.groupby("srch_id")["price"].idxmin(), "relevance"] = 5  # booked: the cheapest
    return frame


EXPEDIA = "# Hotels\n## Evaluation\nSubmissions are evaluated with NDCG@38, per search.\n"


def test_a_ranked_file_with_repeated_ids_and_no_score_column_is_a_ranked_file_task(tmp_path):
    frame = _searches()
    test = frame[frame["srch_id"].astype(int) < 8]
    sample = test[["srch_id", "prop_id"]]  # no score column: the rows in ranked order
    folder = _folder(tmp_path / "expedia", frame.drop(test.index), test.drop(columns=["relevance"]), sample, EXPEDIA)
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.task_type, spec.metric, spec.metric_params) == ("ranking", "ndcg_at_k", {"k": 38})
    assert (spec.id_column, spec.ids_unique, spec.key_columns, spec.ranked_file) == (
        "srch_id",
        False,
        ["prop_id"],
        True,
    )
    assert spec.target_columns == ["relevance"] and spec.prediction_columns == []
    assert any("no score column" in note for note in inferred.notes), inferred.notes


def test_a_ranked_file_with_a_row_id_ranks_within_its_group_column(tmp_path):
    frame = _searches()
    frame.insert(0, "id", [str(i) for i in range(len(frame))])
    frame = frame.rename(columns={"srch_id": "session", "prop_id": "item"})
    test = frame.iloc[:40]
    folder = _folder(
        tmp_path / "sessions",
        frame.iloc[40:],
        test.drop(columns=["relevance"]),
        test[["id", "session", "item"]],
        EXPEDIA,
    )
    spec = infer_task(folder).spec
    assert (spec.id_column, spec.ids_unique, spec.group_column, spec.ranked_file) == ("id", True, "session", True)
    assert spec.key_columns == ["session", "item"]


def test_a_ranked_file_whose_metric_does_not_rank_within_groups_is_refused(tmp_path):
    frame = _searches()
    frame.insert(0, "id", [str(i) for i in range(len(frame))])
    test = frame.iloc[:40]
    sample = test[["id", "srch_id", "prop_id"]]
    folder = _folder(
        tmp_path / "r", frame.iloc[40:], test.drop(columns=["relevance"]), sample, "## Evaluation\nRMSE.\n"
    )
    with pytest.raises(TaskError) as err:
        infer_task(folder)
    assert "ranked_file: true" in err.value.fix


def test_two_score_columns_beside_repeated_ids_are_refused_naming_key_columns(tmp_path):
    frame = _searches()
    test = frame.iloc[:40]
    sample = test[["srch_id", "prop_id"]].assign(a=0.0, b=0.0)
    folder = _folder(tmp_path / "two", frame.iloc[40:], test.drop(columns=["relevance"]), sample, EXPEDIA)
    with pytest.raises(TaskError) as err:
        infer_task(folder)
    assert "2 columns besides them" in str(err.value) and "key_columns" in err.value.fix


def test_the_within_user_ranking_folder_runs_a_dry_run_end_to_end(tmp_path):
    folder = _row_id_folder(tmp_path / "videos")
    done = mlguild("run", str(folder), "--dry-run", "-n", "2", "--sandbox", "local", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    written = yaml.safe_load((folder / "task.yaml").read_text())
    assert (written["group_column"], written["metric"]) == ("user", "mean(gauc, ndcg_at_k@5)")
    assert "Traceback" not in one_line(done.stderr)
