"""Nothing learnable: a run whose best model does not beat a constant says so in one line.

Real runs through the CLI; the data is built so that no model can do better than the
majority class (each level of the only column holds the same 10% of positives).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from mlguild.core.errors import NothingLearnable
from mlguild.scoring.floors import check_learned, floors


def _mlguild(*args, cwd, env=None):
    return subprocess.run(
        [sys.executable, "-m", "mlguild", *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=env
    )


def test_the_verdict_compares_the_best_holdout_score_with_every_floor():
    check_learned(0.81, [0.5, 0.8], "maximize", "roc_auc")  # better than both: learned
    with pytest.raises(NothingLearnable, match=r"best accuracy 0\.8, constant 0\.8"):
        check_learned(0.8, [0.8, 0.7], "maximize", "accuracy")  # a tie is not learning
    with pytest.raises(NothingLearnable, match="constant 10"):
        check_learned(12.0, [15.0, 10.0], "minimize", "rmse")  # the stronger floor counts
    check_learned(None, [0.5], "maximize", "roc_auc")  # nothing to judge
    assert floors([{"type": "run_started", "floor_score": 0.5, "prior_floor_score": 0.7}]) == [0.5, 0.7]


@pytest.mark.slow
def test_a_run_on_data_with_nothing_to_learn_ends_with_a_one_line_error(tmp_path):
    rows = 300
    frame = pd.DataFrame({"level": ["a", "b"] * (rows // 2), "y": ["yes" if i % 10 < 1 else "no" for i in range(rows)]})
    frame.to_csv(tmp_path / "flat.csv", index=False)
    made = _mlguild(
        "init", f"csv:{tmp_path / 'flat.csv'}", "--target", "y", "--metric", "accuracy", "--out", "task", cwd=tmp_path
    )
    assert made.returncode == 0, made.stderr
    done = _mlguild(
        "run", "task", "--iterations", "3", "--brain", "recipes", "--runs-dir", "runs", "--run-id", "flat", cwd=tmp_path
    )
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: nothing learnable: no model beat a constant")
    assert "fix:" in done.stderr
    run = tmp_path / "runs" / "flat"
    assert (run / "final" / "submission.csv").exists()  # the submission is kept, said for what it is
    started = json.loads((run / "journal.jsonl").read_text().splitlines()[0])
    assert started["type"] == "run_started" and started["prior_floor_score"] == pytest.approx(0.9, abs=0.05)
