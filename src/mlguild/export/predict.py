"""``mlguild predict``: an exported solution (or a finished run's) applied to new rows.

The new rows become the test rows of a copy of the export's data folder, and the final
script runs again in the sandbox, with the seed it ran with: for a blend, each member first,
its predictions staged for the blend as the run staged them. A script that saved its fitted
model (``output/model/`` with ``mlguild-model.json``, as the recipes do) is given it back with
the new rows in ``MLGUILD_PREDICT_ROWS`` and applies it without fitting; any other script is
refitted on the export's data as it ran in the run, the new rows as its test rows. Either way
the same rows get the predictions the run's final submission gave them. The predictions are checked like any submission (every
new row once, every value valid) before they are written.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..config import load_config
from ..core.errors import RunError, SubmissionError, TaskError
from ..run.executor import PARENT_OUTPUTS
from ..sandbox import backbones, devices, get_sandbox
from ..sandbox.local import safe_env
from ..scoring.scorer import Scorer
from ..task.spec import TaskSpec
from ..util.exact_csv import read_csv_exact
from ..util.fs import atomic_write, read_no_follow
from ..util.parquet import refresh_parquet
from .bundle import EXPORT_FILE, export_run

Say = Callable[[str], None]
PREDICT_ROWS = "predict_rows.csv"  # the new rows, beside the run's test rows, for a saved model
MODEL_MANIFEST = "mlguild-model.json"  # in output/model/: the script predicts from its saved model


@dataclass(frozen=True)
class Prediction:
    """Where the predictions were written, for how many rows, and how long the scripts ran."""

    path: Path
    rows: int
    seconds: float
    refitted: tuple[str, ...] = ()  # the nodes whose scripts had no saved model and were fitted again
    applied: tuple[str, ...] = ()  # the nodes whose saved models were applied


def is_export(path: Path) -> bool:
    return (path / EXPORT_FILE).is_file()


def predict(
    source: Path,
    new_rows: Path,
    out: Path,
    *,
    sandbox: str = "auto",
    timeout_s: float | None = None,
    say: Say = lambda line: None,
) -> Prediction:
    """Predict the rows of ``new_rows`` (a CSV with the task's test columns) with the export
    at ``source``, or with a finished run's final solution (exported to a temporary folder
    first), and write them to ``out`` in the task's submission format."""
    if not new_rows.is_file():
        raise TaskError(f"{new_rows} is not a file", "give the CSV of the rows to predict")
    with tempfile.TemporaryDirectory(prefix="mlguild-predict-") as tmp:
        work = Path(tmp)
        export = source
        if not is_export(source):
            if not (source / "journal.jsonl").is_file():
                raise TaskError(
                    f"{source} is neither an mlguild export nor a run folder",
                    "give a run folder (runs/RUN) or a folder written by `mlguild export`",
                )
            say(f"exporting the final solution of {source.name} first")
            export = export_run(source, work / "export")
        evidence = json.loads((export / EXPORT_FILE).read_text())
        spec = TaskSpec.model_validate(evidence["spec"])
        data = _data_with(export, spec, new_rows, work / "data", say)
        timeout = timeout_s or float(evidence["timeout_s"])
        runner = _Runner(sandbox, data, int(evidence["threads"]), timeout, say)
        seconds = 0.0
        final_dir = work / "final"
        for member in evidence["members"]:
            folder = work / "members" / member["name"]
            seconds += runner.run(export / member["folder"], folder, int(member["seed"]), member["node"], "member")
            staged = final_dir / PARENT_OUTPUTS / member["name"]
            staged.mkdir(parents=True)
            for file in (folder / "output").glob("*.csv"):
                shutil.copyfile(file, staged / file.name)
        final = evidence["final"]
        seconds += runner.run(
            export,
            final_dir,
            int(final["seed"]),
            final["node"],
            "the blend" if evidence["members"] else "the final script",
        )
        ids = read_csv_exact(data / spec.test_file)[spec.id_column].tolist()
        written = final_dir / "output" / "submission.csv"
        try:
            Scorer(spec, expected_ids=ids, max_bytes=None, labels=_labels(data, spec)).validate(written)
        except SubmissionError as exc:
            raise RunError(
                f"the solution's predictions for {new_rows.name} are invalid ({exc.reason}): {exc.message}",
                "check the new rows: they need the same kinds of values as the task's test rows",
            ) from exc
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out, read_no_follow(written))
        return Prediction(out, len(ids), round(seconds, 2), tuple(runner.refitted), tuple(runner.applied))


def _data_with(export: Path, spec: TaskSpec, new_rows: Path, dest: Path, say: Say) -> Path:
    """A copy of the export's data folder whose test rows are ``new_rows`` (columns checked,
    in the test file's order; numbered when the id column alone is missing) and whose sample
    submission lists them."""
    if spec.file_column is not None:
        raise TaskError(
            "predict reads new rows from a CSV, and this task's rows are input files (file_column)",
            "rerun the exported solution by hand with the new files in its data folder (see the export's README.md)",
        )
    shutil.copytree(export / "data", dest)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    columns = read_csv_exact(dest / spec.test_file).columns.tolist()
    try:
        rows = read_csv_exact(new_rows)
    except (ValueError, pd.errors.ParserError) as exc:
        raise TaskError(
            f"{new_rows} cannot be read as a CSV: {exc}", "give a comma-separated file with a header row"
        ) from None
    missing = [c for c in columns if c not in rows.columns]
    if missing == [spec.id_column]:  # e.g. a task whose ids `init` numbered: number these rows too
        rows.insert(0, spec.id_column, [str(i) for i in range(1, len(rows) + 1)])
        say(f"{new_rows.name} has no {spec.id_column!r} column: its rows are numbered 1 to {len(rows)}")
        missing = []
    if missing:
        shown = ", ".join(repr(c) for c in missing[:10]) + (
            f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        )
        raise TaskError(
            f"{new_rows.name} lacks column(s) {shown} that the solution reads",
            f"give every column of the task's test file: {', '.join(columns[:20])}{' …' if len(columns) > 20 else ''}",
        )
    if rows.empty:
        raise TaskError(f"{new_rows.name} has no rows", "give at least one row to predict")
    if spec.ids_unique and rows[spec.id_column].duplicated().any():
        repeated = rows[spec.id_column][rows[spec.id_column].duplicated()].iloc[0]
        raise TaskError(f"{new_rows.name} repeats the id {repeated!r}", f"give each row its own {spec.id_column}")
    rows = rows[columns]
    # A saved model is applied to PREDICT_ROWS beside the run's own test rows (its encoders
    # are fitted on those); a refitted script and a blend read the new rows as the test rows.
    shutil.copytree(dest, dest.with_name("data-saved-model"))
    rows.to_csv(dest.with_name("data-saved-model") / PREDICT_ROWS, index=False)
    rows.to_csv(dest / spec.test_file, index=False)
    refresh_parquet(dest / spec.test_file)  # a large table's typed copy: the new rows
    template = read_csv_exact(dest / spec.sample_submission)
    sample = pd.DataFrame(
        {
            c: rows[c].to_numpy() if c in rows.columns else (template[c].iloc[0] if len(template) else "")
            for c in spec.submission_columns
        }
    )
    sample.to_csv(dest / spec.sample_submission, index=False)
    return dest


def _labels(data: Path, spec: TaskSpec) -> set[str]:
    """The training labels a label prediction may take."""
    train = read_csv_exact(data / spec.train_file)
    return {str(v) for c in spec.target_columns if c in train.columns for v in train[c].unique()}


class _Runner:
    """Runs one script folder's ``solution.py`` in the sandbox on the prediction data."""

    def __init__(self, kind: str, data: Path, threads: int, timeout_s: float, say: Say):
        self.sandbox = get_sandbox(kind)
        self.data, self.threads, self.timeout_s, self.say = data, threads, timeout_s, say
        self.limits = load_config(None, []).sandbox.limits(timeout_s)
        self.refitted: list[str] = []
        self.applied: list[str] = []

    def run(self, source: Path, folder: Path, seed: int, node: str, role: str) -> float:
        what = f"{role} {node}"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / "solution.py", folder / "solution.py")
        extra = {
            "MLGUILD_SEED": str(seed),
            "MLGUILD_TIME_BUDGET": str(int(self.timeout_s)),
            "MLGUILD_THREADS": str(self.threads),
            **backbones.script_env(),  # pretrained weights found here (a sentence-embedding recipe needs them)
            **devices.script_env(()),  # predictions on the CPU
        }
        data = self.data
        if (source / "model").is_dir():  # a script that saved its fitted model may load it, not retrain
            shutil.copytree(source / "model", folder / "model")
            extra["MLGUILD_MODEL_DIR"] = "model"
        if (source / "model" / MODEL_MANIFEST).is_file():  # it says it predicts from it: no fitting
            extra["MLGUILD_PREDICT_ROWS"] = PREDICT_ROWS
            data = self.data.with_name("data-saved-model")
        extra["MLGUILD_STARTED_AT"] = f"{time.time():.3f}"  # the time limit's clock (as mlguild.run.executor)
        env = safe_env(cwd=folder, extra=extra)
        result = self.sandbox.run(
            [sys.executable, "solution.py"],
            cwd=folder,
            env=env,
            limits=self.limits,
            stdout_path=folder / "stdout.txt",
            stderr_path=folder / "stderr.txt",
            data_dir=data,
        )
        if result.exit_code != 0 or not (folder / "output" / "submission.csv").is_file():
            last = (result.stderr_tail.strip().splitlines() or [result.reason or "no message"])[-1]
            raise RunError(
                f"{what} failed on the new rows ({result.reason or result.status}): {last[:300]}",
                "check that the new rows have the kinds of values the task's rows have",
            )
        if role == "the blend":  # its weights, applied to the members' predictions staged for it
            self.say(f"{what}: its weights applied to the members' predictions ({result.duration_s:.1f} s)")
        elif data == self.data:
            self.refitted.append(node)
            self.say(f"{what}: no saved model, refitted on the export's data ({result.duration_s:.1f} s)")
        else:
            self.applied.append(node)
            self.say(f"{what}: applied its saved model, nothing fitted ({result.duration_s:.1f} s)")
        return result.duration_s
