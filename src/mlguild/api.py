"""The short Python API: ``mlguild.fit`` a data frame, then read, predict and export the result.

    import mlguild
    result = mlguild.fit(train, target="price", time="10m")
    result.leaderboard()            # one row per model family and per blend, best first
    result.predict(new_rows)        # a data frame in the submission format
    result.export("price-model")    # a folder to hand over (mlguild export)
    result = mlguild.open("runs/price-20261202-101500-ab12")   # a run made earlier, or by the CLI

``fit`` builds a task from the frame (as ``mlguild init csv:`` does), then calls the same
library entry as ``mlguild run`` (``mlguild.launch.start``), so a run made here is a run like
any other: ``mlguild status``, ``serve`` and ``resume`` work on it.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.errors import ConfigError
from .core.vocabulary import Op

if TYPE_CHECKING:
    import pandas as pd

    from .core.graph import Node
    from .view.runs import RunView


def fit(
    train: pd.DataFrame | str | Path,
    target: str,
    *,
    test: pd.DataFrame | str | Path | None = None,
    time: str | None = None,
    iterations: int | None = None,
    metric: str | None = None,
    task_type: str | None = None,
    id_column: str | None = None,
    name: str | None = None,
    runs_dir: str | Path = "runs",
    settings: dict[str, Any] | None = None,
) -> Result:
    """Improve a solution for predicting ``target`` from the other columns of ``train`` (a
    data frame or a CSV path) within ``time`` (e.g. "10m") or ``iterations`` nodes, and
    return the finished run. ``test``: rows to predict (default: a fifth of ``train`` is set
    aside as test rows, with their answers sealed, so the run is graded once at the end).
    ``settings``: configuration values, as ``--set`` takes them (``{"search.workers": 2}``).
    Raises what ``mlguild run`` reports as an error (an ``MlguildError``, with a ``fix``)."""
    from .config import load_config, mlguild_home, parse_duration
    from .launch.entry import Finished, start
    from .sources.csv_source import build_from_csv
    from .sources.resolve import task_name
    from .task.folder import load_task

    sets = [f"{key}={value}" for key, value in (settings or {}).items()]
    if time is not None:
        sets.append(f"budget.time_s={parse_duration(time, 'time=', minimum_s=30)}")
    if iterations is not None:
        sets.append(f"budget.iterations={int(iterations)}")
    config = load_config(None, sets)
    with tempfile.TemporaryDirectory(prefix="mlguild-fit-") as tmp:
        train_path = _as_csv(train, Path(tmp) / "train.csv", "train")
        test_path = _as_csv(test, Path(tmp) / "test.csv", "test") if test is not None else None
        label = name or (Path(train).stem if isinstance(train, str | Path) else f"{target}-fit")
        folder = build_from_csv(
            train_path,
            mlguild_home() / "tasks" / task_name("csv", label),
            target=target,
            test=test_path,
            id_column=id_column,
            task_type=task_type,
            metric=metric,
            name=label,
            overwrite=True,  # a run keeps its own copy of the data: the task folder may be rebuilt
        )
    finished = start(load_task(folder), config, runs_dir=runs_dir)
    assert isinstance(finished, Finished)  # launch=True: the run was driven to its end
    finished.check()  # no valid submission, or nothing learnt: the same error the CLI shows
    return Result(Path(finished.run.path))


def open(run: str | Path) -> Result:
    """The result of the run at ``run`` (a run folder, made by ``fit`` or by ``mlguild run``)."""
    from .view.runs import load_run

    load_run(Path(run))  # a RunError now if it is not a run folder
    return Result(Path(run).absolute())


LEADERBOARD_COLUMNS = [
    "model", "best_node", "holdout_score", "oof_score", "nodes", "failed", "script_s", "fit_s", "predict_s",
]  # fmt: skip


def _fit_predict_seconds(view: RunView, node: Node) -> dict[str, float | None]:
    """The seconds a node's script spent fitting and predicting, from the manifest it saved
    with its model (``output/model/mlguild-model.json``); a blend's are its members' sums."""
    import json

    def manifest(node_id: str) -> Path:
        return view.path / "nodes" / node_id / "output" / "model" / "mlguild-model.json"

    parts = [node.id]
    if node.op in (Op.BLEND, Op.FUSE) and not manifest(node.id).is_file():  # a blend of predictions
        parts = list(node.parents)
    totals: dict[str, float | None] = {"fit_s": 0.0, "predict_s": 0.0}
    for part in parts:
        try:
            saved = json.loads(manifest(part).read_text())
        except (OSError, ValueError):
            return {"fit_s": None, "predict_s": None}
        for key in totals:
            value = saved.get(key)
            totals[key] = None if value is None or totals[key] is None else round(float(totals[key] or 0) + value, 3)
    return totals


def _as_csv(data: pd.DataFrame | str | Path, dest: Path, what: str) -> Path:
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        data.to_csv(dest, index=False)
        return dest
    if isinstance(data, str | Path):
        return Path(data)
    raise ConfigError(f"{what} must be a pandas DataFrame or a CSV path, not {type(data).__name__}", f"pass {what}=df")


@dataclass(frozen=True)
class Result:
    """A finished (or stopped) run, read from its folder whenever asked."""

    path: Path

    @property
    def _view(self) -> RunView:
        from .view.runs import load_run

        return load_run(self.path)

    @property
    def metric(self) -> str:
        return str(self._view.spec["metric"])

    @property
    def score(self) -> float | None:
        """The best node's holdout score."""
        view = self._view
        best = view.state.best_id
        return None if best is None else view.state.graph[best].score

    @property
    def test_score(self) -> float | None:
        """The final submission's score on the sealed test answers, when the task has them."""
        return self._view.final_score()

    @property
    def submission(self) -> Path:
        """The final submission for the task's test rows."""
        return self.path / "final" / "submission.csv"

    def leaderboard(self) -> pd.DataFrame:
        """One row per model family (a recipe, or an LLM-written branch) and per blend, best
        first: its best node, holdout score, out-of-fold score (scored here on the training
        labels, when the node wrote out-of-fold predictions), nodes tried and the seconds its
        best node's script ran, and of those the seconds spent fitting and predicting, where the
        script saved them with its model (the recipes do; a blend adds up its members')."""
        import pandas as pd

        view = self._view
        graph = view.state.graph
        families: dict[str, list[Node]] = defaultdict(list)
        for node in graph:
            if node.op in (Op.REFIT, Op.EDA) or node.op == Op.RERUN:
                continue
            families[_family(node, graph)].append(node)
        rows = []
        sign = 1.0 if view.direction == "maximize" else -1.0
        for family, nodes in families.items():
            scored = [n for n in nodes if n.score is not None]
            best = max(scored, key=lambda n: sign * float(n.score or 0.0)) if scored else None
            rows.append(
                {
                    "model": family,
                    "best_node": best.id if best else None,
                    "holdout_score": best.score if best else None,
                    "oof_score": _oof_score(view, best) if best else None,
                    "nodes": len(nodes),
                    "failed": sum(1 for n in nodes if not n.ok),
                    "script_s": round(float(best.timing.get("exec_s", 0.0)), 2) if best else None,
                    **(_fit_predict_seconds(view, best) if best else {"fit_s": None, "predict_s": None}),
                }
            )
        frame = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
        key = frame["holdout_score"].astype(float) * sign
        return (
            frame.assign(_key=key)
            .sort_values("_key", ascending=False, na_position="last")
            .drop(columns="_key")
            .reset_index(drop=True)
        )

    def predict(self, rows: pd.DataFrame | str | Path, *, sandbox: str = "auto") -> pd.DataFrame:
        """The final solution's predictions for ``rows`` (a frame or a CSV path with the
        task's test columns), in the submission format (``mlguild predict``)."""
        import pandas as pd

        from .export.predict import predict

        id_column = str(self._view.spec["id_column"])
        with tempfile.TemporaryDirectory(prefix="mlguild-predict-") as tmp:
            source = _as_csv(rows, Path(tmp) / "rows.csv", "rows")
            out = predict(self.path, source, Path(tmp) / "predictions.csv", sandbox=sandbox)
            return pd.read_csv(out.path, dtype={id_column: str}, keep_default_na=False)

    def export(self, dest: str | Path, overwrite: bool = False) -> Path:
        """Write the final solution as a folder to hand over (``mlguild export``)."""
        from .export.bundle import export_run

        return export_run(self.path, Path(dest), overwrite=overwrite)

    def report(self) -> Path:
        """The run's HTML report (written again now, so it shows the run as it stands)."""
        from .view.report import write_report

        write_report(self.path)
        return self.path / "report.html"


def _family(node: Node, graph: Any) -> str:
    if node.is_blend:
        return f"blend of {', '.join(node.parents)}"
    recipe = node.meta.get("recipe")
    if recipe:
        return str(recipe)
    draft = graph.nodes.get(node.branch) if node.branch else None
    title = (draft.title if draft is not None else node.title) or "untitled"
    return f"{node.branch or node.id}: {title[:60]}"


def _oof_score(view: RunView, node: Node) -> float | None:
    """The node's out-of-fold predictions scored on the training labels (which the
    workspace holds; the holdout's stay sealed). None without them, or when they cannot be scored."""
    from .core.errors import SubmissionError
    from .scoring.scorer import Scorer
    from .task.spec import TaskSpec
    from .util.exact_csv import read_csv_exact

    oof = view.path / "nodes" / node.id / "output" / "oof.csv"
    spec = TaskSpec.model_validate(view.spec)
    if not oof.is_file() or not spec.ids_unique:
        return None
    try:
        predicted = read_csv_exact(oof)
        train = read_csv_exact(view.path / "workspace" / "data" / spec.train_file).set_index(spec.id_column)
        ids = predicted[spec.id_column]
        answers = train.loc[ids, spec.target_columns].reset_index()
        return Scorer(spec, answers=answers, max_bytes=None).score(oof).value
    except (SubmissionError, ValueError, KeyError):
        return None
