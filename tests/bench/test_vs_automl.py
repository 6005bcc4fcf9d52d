"""How ``benchmarks/vs_automl.py`` compares mlguild with the best peer of a task (issue 38): the
normalised score (0 = the constant floor, 1 = the best peer) and a verdict from paired bootstrap
resamples of the test rows, never from the two scores alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import make_task

from mlguild.task.folder import load_task

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import vs_automl


def _submission(path: Path, ids, values) -> str:
    pd.DataFrame({"id": ids, "y": 1 / (1 + np.exp(-values))}).to_csv(path, index=False)  # probabilities
    return str(path)


def test_mlguild_is_ahead_of_the_best_peer_only_beyond_the_noise_of_the_test_rows(tmp_path):
    task = load_task(make_task(tmp_path / "task", n=800))
    answers = pd.read_csv(task.answers_path, dtype={"id": str})
    truth = answers["y"].to_numpy()
    rng = np.random.default_rng(0)
    exact = truth + rng.normal(scale=0.2, size=len(truth))  # ranks nearly every row right: AUC near 0.99
    noisy = truth + rng.normal(scale=1.0, size=len(truth))  # AUC about 0.76
    worse = truth + rng.normal(scale=3.0, size=len(truth))
    ids = answers["id"]
    results = {
        "mlguild": {"score": 0.99, "submission": _submission(tmp_path / "ours.csv", ids, exact)},
        "flaml": {"score": 0.76, "submission": _submission(tmp_path / "flaml.csv", ids, noisy)},
        "autogluon_best": {"score": 0.6, "submission": _submission(tmp_path / "ag.csv", ids, worse)},
        "autogluon": {"status": "failed", "score": None},
    }
    row = {"direction": "maximize", "floor": 0.5, "results": results}
    versus = vs_automl.against_best_peer(task, row)
    assert versus["peer"] == "flaml" and versus["normalised"] == (0.99 - 0.5) / (0.76 - 0.5)
    assert versus["verdict"] == "ahead" and versus["wins"] >= vs_automl.BEYOND_NOISE, versus
    # The same predictions as the best peer's: a tie, whatever the two scores say.
    results["mlguild"]["submission"] = _submission(tmp_path / "same.csv", ids, noisy)
    assert vs_automl.against_best_peer(task, row)["verdict"] == "tie"
    # Far worse than it: behind.
    results["mlguild"]["submission"] = _submission(tmp_path / "worse.csv", ids, worse)
    assert vs_automl.against_best_peer(task, row)["verdict"] == "behind"
    rows = [{**row, "vs_best_peer": {"verdict": v, "normalised": n}} for v, n in (("ahead", 1.2), ("tie", 1.0))]
    assert vs_automl.summary([*rows, {"vs_best_peer": None}]) == {
        "tasks": 2, "ahead": 1, "tie": 1, "behind": 0, "mean_normalised": 1.1,
    }  # fmt: skip
    # No peer scored: nothing to compare.
    assert vs_automl.against_best_peer(task, {**row, "results": {"mlguild": results["mlguild"]}}) is None


def test_a_comparison_run_in_parts_reuses_only_ok_results_of_the_same_budget_still_on_disk(tmp_path):
    kept, gone = tmp_path / "ag.csv", tmp_path / "gone.csv"
    kept.write_text("id,y\n1,0.5\n")
    earlier = {
        "budget_s": 1800.0,
        "tasks": [
            {
                "task": "ames",
                "results": {
                    "autogluon_best": {"status": "ok", "score": 0.11, "submission": str(kept)},
                    "flaml": {"status": "ok", "score": 0.12, "submission": str(gone)},
                    "autogluon": {"status": "timeout", "score": None, "submission": str(kept)},
                },
            }
        ],
    }
    path = tmp_path / "peers.json"
    path.write_text(json.dumps(earlier))
    found = vs_automl.reusable(path, 1800.0)
    assert list(found) == [("ames", "autogluon_best")]
    assert found[("ames", "autogluon_best")]["reused_from"] == str(path)
    with pytest.raises(SystemExit, match=r"budget is 1800\.0 s, not 300 s"):
        vs_automl.reusable(path, 300.0)
