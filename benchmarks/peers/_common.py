"""What the peer runners share: arguments, reading a task folder, writing the submission.

Runs inside a peer's own venv (.bench/<peer>), so it imports nothing from mlguild: only the
standard library, numpy and pandas (PyYAML when the spec comes from task.yaml).

The data is given the way a data scientist would give it out of the box: the raw train
DataFrame as pandas reads the CSV, minus the id column (an arbitrary row number is not a
feature), with the label as text for classification (so predicted labels are written
exactly as the answers spell them) and as a number for regression. Text columns stay raw
strings; image arrays are already one numeric column per pixel in these task files.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

# metric -> what a submission holds (mirrors mlguild.metrics; used only when the spec lacks
# prediction_kind, i.e. when it is read from a task.yaml rather than mlguild's task.json)
PREDICTION_KIND = {
    "accuracy": "label",
    "f1": "label",
    "f1_macro": "label",
    "qwk": "label",
    "roc_auc": "probability",
    "binary_logloss": "probability",
    "logloss": "class_probabilities",
    "rmse": "value",
    "rmsle": "value",
    "mae": "value",
    "r2": "value",
    "map_at_k": "ranked_list",
    "gauc": "value",
    "ndcg_at_k": "value",
}


@dataclass
class Job:
    spec: dict
    train: pd.DataFrame
    test: pd.DataFrame
    budget_s: float
    threads: int
    out: Path
    workdir: Path
    info_path: Path | None
    info: dict = field(default_factory=dict)

    @property
    def target(self) -> str:
        return self.spec["target_columns"][0]

    @property
    def id_column(self) -> str:
        return self.spec["id_column"]

    @property
    def task_type(self) -> str:
        return self.spec["task_type"]

    @property
    def metric(self) -> str:
        return self.spec["metric"]

    @property
    def kind(self) -> str:
        return self.spec.get("prediction_kind") or PREDICTION_KIND[self.metric]

    def features(self, frame: pd.DataFrame) -> pd.DataFrame:
        drop = [c for c in (self.id_column, *self.spec["target_columns"]) if c in frame.columns]
        return frame.drop(columns=drop)

    def labels(self) -> pd.Series:
        return self.train[self.target]

    def positive_label(self, classes) -> str:
        """The class whose probability is submitted (as mlguild's scorer decides it)."""
        if self.spec.get("positive_label"):
            return str(self.spec["positive_label"])
        seen = {str(c) for c in classes}
        for neg, pos in (("0", "1"), ("False", "True")):
            if seen <= {neg, pos}:
                return pos
        raise SystemExit(f"cannot tell the positive class among {sorted(seen)}: set positive_label in the task")


def parse_args(description: str, presets: str | None = None) -> argparse.Namespace:
    """The runners' arguments; ``presets``: the default of ``--presets`` for a peer that has
    presets (AutoGluon), None for one that has not."""
    p = argparse.ArgumentParser(description=description)
    if presets is not None:
        p.add_argument("--presets", default=presets, help=f"The peer's presets (default: {presets}).")
    p.add_argument(
        "--task",
        type=Path,
        help="Task folder (task.yaml, public/); not needed when --spec, --train and --test are all given.",
    )
    p.add_argument(
        "--spec",
        type=Path,
        help="The task's public spec as JSON (what mlguild's scripts get as "
        "task.json: TaskSpec.public_dict()); default: --task's task.yaml.",
    )
    p.add_argument("--train", type=Path, help="Labelled rows (default: <task>/public/<train_file>).")
    p.add_argument("--test", type=Path, help="Test inputs (default: <task>/public/<test_file>).")
    p.add_argument("--budget", type=float, required=True, help="Training time budget in seconds.")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="Cores to use.")
    p.add_argument("--out", type=Path, required=True, help="submission.csv to write.")
    p.add_argument("--workdir", type=Path, help="Scratch folder for models (default: beside --out).")
    p.add_argument("--info", type=Path, help="Write what the peer chose (models, timings) here as JSON.")
    args = p.parse_args()
    if args.task is None and not (args.spec and args.train and args.test):
        p.error("give --task, or all of --spec, --train and --test")
    return args


def load_job(args: argparse.Namespace) -> Job:
    if args.spec:
        spec = json.loads(args.spec.read_text())
        spec = spec.get("spec", spec)  # accept a run's task.json snapshot as well
    else:
        import yaml

        spec = yaml.safe_load((args.task / "task.yaml").read_text())
    if len(spec["target_columns"]) != 1:
        raise SystemExit(f"only single-target tasks are supported, got {spec['target_columns']}")
    kind = spec.get("prediction_kind") or PREDICTION_KIND[spec["metric"]]
    if kind == "ranked_list" or spec["task_type"] == "ranking":
        raise SystemExit("ranking tasks are not supported by the peer runners")
    public = args.task / "public" if args.task else None
    train_path = args.train or public / spec.get("train_file", "train.csv")
    test_path = args.test or public / spec.get("test_file", "test.csv")
    target = spec["target_columns"][0]
    # ids and class labels are read as text, exactly as written; everything else as pandas infers
    label_type = float if spec["task_type"] == "regression" else str
    train = pd.read_csv(train_path, dtype={spec["id_column"]: str, target: label_type}, keep_default_na=True)
    test = pd.read_csv(test_path, dtype={spec["id_column"]: str})
    if label_type is str and train[target].isna().any():
        raise SystemExit(f"{train_path}: the label column {target!r} has empty cells")
    workdir = args.workdir or args.out.parent / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    return Job(
        spec,
        train,
        test,
        args.budget,
        max(1, args.threads),
        args.out,
        workdir,
        args.info,
        info={
            "train_rows": len(train),
            "test_rows": len(test),
            "budget_s": args.budget,
            "threads": args.threads,
            "prediction_kind": kind,
        },
    )


def rmsle(y_true, y_pred) -> float:
    """The task metric for rmsle tasks (predictions below 0 clipped, as in write_submission)."""
    t = np.asarray(y_true, dtype=float)
    p = np.clip(np.asarray(y_pred, dtype=float), 0, None)
    return float(math.sqrt(np.mean((np.log1p(p) - np.log1p(t)) ** 2)))


def write_submission(job: Job, predictions, proba: pd.DataFrame | None = None) -> None:
    """Write the submission in the task's format, rows in the test file's order.

    ``predictions``: labels or values, one per test row. ``proba``: class probabilities with
    one column per class (column names as label text), for probability kinds.
    """
    spec, kind = job.spec, job.kind
    sub = pd.DataFrame({job.id_column: job.test[job.id_column].astype(str).to_numpy()})
    cols = spec["submission_columns"][1:]
    if kind == "probability":
        proba = proba.rename(columns=str)
        pos = job.positive_label(proba.columns)
        sub[cols[0]] = np.clip(proba[pos].to_numpy(dtype=float), 0.0, 1.0)
    elif kind == "class_probabilities":
        proba = proba.rename(columns=str)
        classes = [str(c) for c in (spec.get("classes") or cols)]
        for col, cls in zip(cols, classes):
            sub[col] = np.clip(proba[cls].to_numpy(dtype=float), 0.0, 1.0) if cls in proba.columns else 0.0
    elif kind == "label":
        sub[cols[0]] = pd.Series(np.asarray(predictions)).astype(str).to_numpy()
    elif kind == "value":
        values = np.asarray(predictions, dtype=float)
        if job.metric == "rmsle":
            values = np.clip(values, 0, None)  # rmsle is undefined below -1; prices are never negative
        sub[cols[0]] = values
    else:
        raise SystemExit(f"prediction kind {kind!r} is not supported")
    sub[spec["submission_columns"]].to_csv(job.out, index=False)


def save_info(job: Job) -> None:
    if job.info_path:
        job.info_path.write_text(json.dumps(job.info, indent=2, default=str))


class Clock:
    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def lap(self) -> float:
        return round(time.monotonic() - self.t0, 2)
