"""Shared fixtures: small task folders built from the bundled data, and isolated homes."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mlguild.sources.examples import build_example


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    # Never touch the user's ~/.mlguild or ./runs from a test.
    home = tmp_path_factory.mktemp("mlguild-home")
    monkeypatch.setenv("MLGUILD_HOME", str(home))


@pytest.fixture(scope="session")
def example_tasks(tmp_path_factory) -> dict[str, Path]:
    """The bundled examples, built once per test session."""
    root = tmp_path_factory.mktemp("examples")
    return {name: build_example(name, root / name) for name in ("churn", "ames", "reviews", "titanic", "digits")}


def make_task(root: Path, n: int = 200, task_type: str = "binary", metric: str = "roc_auc", seed: int = 0,
              with_answers: bool = True) -> Path:
    """A small synthetic task folder (numeric features, an informative x0) for fast tests."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    if task_type == "regression":
        y = (3 * x[:, 0] + rng.normal(scale=0.5, size=n) + 10).round(3)
    else:
        y = (x[:, 0] + rng.normal(scale=0.5, size=n) > 0).astype(int)
    frame = pd.DataFrame({"id": [f"r{i:05d}" for i in range(n)], "x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "y": y})
    n_test = n // 4
    train, test = frame.iloc[n_test:], frame.iloc[:n_test]
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    train.to_csv(root / "public" / "train.csv", index=False)
    test.drop(columns=["y"]).to_csv(root / "public" / "test.csv", index=False)
    sample = pd.DataFrame({"id": test["id"], "y": 0.5 if task_type != "regression" else 10.0})
    sample.to_csv(root / "public" / "sample_submission.csv", index=False)
    if with_answers:
        test[["id", "y"]].to_csv(root / "private" / "answers.csv", index=False)
    spec = {"name": root.name, "task_type": task_type, "metric": metric, "id_column": "id",
            "target_columns": ["y"], "submission_columns": ["id", "y"]}
    if task_type == "binary" and metric == "roc_auc":
        spec["positive_label"] = "1"
    (root / "task.yaml").write_text(yaml.safe_dump(spec))
    (root / "description.md").write_text(f"# {root.name}\nSynthetic test task.\n")
    return root


@pytest.fixture
def small_task(tmp_path) -> Path:
    return make_task(tmp_path / "small")


def no_process_with(marker: str) -> bool:
    """True when no live process has ``marker`` in its command line or environment."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            status = (entry / "stat").read_text().split(") ")[-1].split()[0]
            if status == "Z":
                continue
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in blob:
            return False
    return True
