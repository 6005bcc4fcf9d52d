"""A metric the user supplies as a Python file (issue 37, item 1): ``metric: python(metric.py,
maximize)`` in task.yaml, the file beside it. The harness imports it when the task is loaded,
copies it into the run's sealed folder and scores every node with it, outside the sandbox, on
sealed labels; a file that cannot be imported, a ``score`` that raises or returns no finite
number, is one line naming the file and the line that failed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import mlguild, one_line

from mlguild.core.errors import ConfigError, TaskError
from mlguild.metrics import get_metric
from mlguild.metrics.python_file import SEALED_NAME, MetricFileError
from mlguild.scoring.scorer import Scorer
from mlguild.task.folder import load_task

# Within 10% of the truth counts as a hit: a metric no registry has.
WITHIN_TEN_PERCENT = """
import numpy as np


def score(y_true, y_pred):
    return float(np.mean(np.abs(y_pred - y_true) <= 0.1 * np.abs(y_true)))
"""


def _task(root: Path, metric: str = "python(metric.py, maximize)", code: str = WITHIN_TEN_PERCENT) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": range(200), "x": rng.uniform(1, 10, 200)})
    frame["y"] = (frame["x"] * 3 + rng.normal(0, 1, 200)).round(3)
    (root / "public").mkdir(parents=True)
    frame.iloc[:160].to_csv(root / "public" / "train.csv", index=False)
    frame.iloc[160:].drop(columns=["y"]).to_csv(root / "public" / "test.csv", index=False)
    frame.iloc[160:][["id"]].assign(y=15.0).to_csv(root / "public" / "sample_submission.csv", index=False)
    spec = dict(
        name="near", task_type="regression", metric=metric, id_column="id", target_columns=["y"],
        submission_columns=["id", "y"], answers_file=None,
    )  # fmt: skip
    (root / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (root / "description.md").write_text("# near\n")
    (root / "metric.py").write_text(code)
    return root


def test_a_metric_file_scores_submissions_with_its_declared_direction(tmp_path):
    task = load_task(_task(tmp_path / "near"))
    metric = get_metric(task.spec.metric)
    assert (task.spec.metric, metric.direction, task.spec.metric_direction) == (
        "python(metric.py, maximize)",
        "maximize",
        "maximize",
    )
    answers = pd.DataFrame({"id": ["1", "2", "3", "4"], "y": ["10", "20", "30", "40"]})
    scorer = Scorer(task.spec, answers=answers)
    sub = tmp_path / "sub.csv"
    pd.DataFrame({"id": ["1", "2", "3", "4"], "y": [10.5, 25, 30, 39]}).to_csv(sub, index=False)
    assert scorer.score(sub).value == pytest.approx(0.75)  # 25 is 25% off: 3 hits of 4


def test_a_run_scores_with_its_sealed_copy_of_the_metric_file(tmp_path):
    folder = _task(tmp_path / "near")
    done = mlguild("run", str(folder), "--dry-run", "-n", "2", "--sandbox", "local", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run = next((tmp_path / "runs").iterdir())
    assert (run / "sealed" / SEALED_NAME).read_text() == WITHIN_TEN_PERCENT
    assert not (run / "workspace" / "data" / "metric.py").exists()  # the harness's, not the scripts'
    assert "python(metric.py, maximize)" in one_line(done.stdout)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("import numpy as np\nimport no_such_package_here\n", "cannot be imported: ModuleNotFoundError"),
        ("def score(y_true, y_pred)\n    return 1.0\n", "cannot be imported: SyntaxError"),
        ("def scores(y_true, y_pred):\n    return 1.0\n", "defines no function score(y_true, y_pred)"),
    ],
)
def test_a_metric_file_that_cannot_be_imported_stops_the_task_in_one_line(tmp_path, code, words):
    with pytest.raises(MetricFileError) as err:
        load_task(_task(tmp_path / "near", code=code))
    assert words in err.value.message and "metric.py" in err.value.message and "\n" not in err.value.message
    assert "fix " in err.value.fix


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (
            "def score(y_true, y_pred):\n    x = 1\n    return x / 0\n",
            "failed: ZeroDivisionError: division by zero (line 3)",
        ),
        ("def score(y_true, y_pred):\n    return float('nan')\n", "returned nan, not a finite number"),
        ("def score(y_true, y_pred):\n    return 'good'\n", "failed: ValueError"),
    ],
)
def test_a_metric_file_that_fails_on_a_submission_is_one_line_naming_the_line(tmp_path, code, words):
    task = load_task(_task(tmp_path / "near", code=code))
    answers = pd.DataFrame({"id": ["1", "2"], "y": ["10", "20"]})
    sub = tmp_path / "sub.csv"
    pd.DataFrame({"id": ["1", "2"], "y": [10, 20]}).to_csv(sub, index=False)
    with pytest.raises(MetricFileError) as err:
        Scorer(task.spec, answers=answers).score(sub)
    assert words in err.value.message and "\n" not in err.value.message, err.value.message


def test_a_run_whose_metric_file_fails_stops_with_one_line(tmp_path):
    folder = _task(tmp_path / "near", code="def score(y_true, y_pred):\n    raise RuntimeError('no')\n")
    done = mlguild("run", str(folder), "--dry-run", "-n", "2", "--sandbox", "local", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the metric file metric.py failed: RuntimeError: no (line 2)" in one_line(done.stdout + done.stderr)
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("metric", "words"),
    [
        ("python(metric.py)", "needs the file and its direction"),
        ("python(metric.py, bigger)", "declare its direction, maximize or minimize"),
        ("python(../metric.py, maximize)", "inside the task folder"),
        ("python(metric.py, maximize, ranks)", "unknown option(s) ['ranks']"),
    ],
)
def test_a_metric_file_named_wrongly_is_one_line(tmp_path, metric, words):
    with pytest.raises((TaskError, ConfigError)) as err:
        load_task(_task(tmp_path / "near", metric=metric))
    assert words in str(err.value.args[0]) and "\n" not in str(err.value.args[0])


def test_a_metric_file_that_is_missing_is_one_line(tmp_path):
    root = _task(tmp_path / "near")
    (root / "metric.py").unlink()
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert "names the file metric.py, which is not in" in str(err.value.args[0])
