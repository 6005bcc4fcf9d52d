"""What the harness measured of a node beyond its score, for the prompt that builds on it.

Three kinds of evidence, each a few lines of text:

- **Its folds:** the per-fold scores the script printed (the contract asks for
  ``fold <k>: score <number>``), with their mean and spread: a change that moved the mean by
  less than the folds differ did nothing measurable. A script's own numbers, marked so.
- **Where it errs:** the largest errors by a segment of the data, the worst deciles of its
  prediction and the category with the worst residuals. Computed by the harness from the
  node's ``output/oof.csv`` against the *training* labels, never from the holdout: a model
  shown where its holdout errors lie, node after node, could fit the holdout through the
  prompt (the firewall seals those labels so that no number a script can act on comes from
  them but the score itself). Out-of-fold rows are rows the model did not train on, with
  labels a script may read anyway, so the breakdown tells as much and seals nothing.
- **Its blend:** for a blend, its members, their weights (the blend's ``fuse_weights.json``)
  and how their out-of-fold files were used; for a node a blend uses, that blend and the
  node's weight in it, so that a change can aim at diversity or at the member's own score.

Nothing here reads a sealed file, and a node's files are read without following links.
"""

from __future__ import annotations

import io
import json
import math
import re
import statistics

import numpy as np
import pandas as pd

from ..core.graph import Node, SearchGraph
from ..rundir.folder import RunDir
from ..task.profile import ColumnProfile
from ..util.exact_csv import read_csv_exact
from ..util.fs import read_text_no_follow

_NUMBER = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_WORST_DECILES = 3  # deciles of the prediction a prompt names
_MIN_LEVEL_ROWS = 20  # a category level with fewer out-of-fold rows is noise, not a segment
_MAX_LEVELS = 50  # a categorical column with more levels is left out of the breakdown
_PREDICTED = "__mlguild_prediction"  # the prediction's column once joined to the labels (names may clash)
_BLEND_OOF = (
    "the blend's weights were fitted on its members' out-of-fold predictions of the training rows "
    "(greedy ensemble selection, or a stacker cross-validated on them: its fuse_weights.json says which); "
    "the holdout measures the blend"
)


def fold_scores(stdout: str, metric: str) -> list[float]:
    """The per-fold scores a script printed (``fold 3: score 0.91``, or the metric's name in
    place of ``score``), the last printed for each fold, in fold order."""
    pattern = re.compile(
        rf"^\s*fold\s*#?\s*(\d+)\b[^\n]*?\b(?:score|{re.escape(metric)})\b\s*[:=]?\s*{_NUMBER}",
        re.IGNORECASE | re.MULTILINE,
    )
    found: dict[int, float] = {}
    for number, value in pattern.findall(stdout):
        if math.isfinite(float(value)):
            found[int(number)] = float(value)
    return [found[k] for k in sorted(found)]


def folds_line(scores: list[float], metric: str) -> str:
    """The per-fold scores with their mean and spread, in one line ("" for fewer than two)."""
    if len(scores) < 2:
        return ""
    shown = ", ".join(f"{s:.5g}" for s in scores)
    sd = statistics.stdev(scores)
    return (
        f"Per-fold {metric} (printed by the script, untrusted): {shown}; mean {statistics.fmean(scores):.5g}, "
        f"spread (sd) {sd:.2g}, range {min(scores):.5g} to {max(scores):.5g} over {len(scores)} folds. "
        "A change moving the mean by less than the spread is not measurably better."
    )


class Evidence:
    """A run's evidence lines per node, computed once per node (the training labels read once)."""

    def __init__(self, run: RunDir):
        self.run = run
        self.spec = run.spec
        self._train: pd.DataFrame | None = None
        self._errors: dict[str, tuple[str, ...]] = {}

    def lines(self, graph: SearchGraph, node: Node, stdout: str) -> tuple[str, ...]:
        """Every evidence line for ``node`` (its folds, where it errs, its blend)."""
        out = [folds_line(fold_scores(stdout, self.spec.metric), self.spec.metric)]
        if node.ok:
            if node.id not in self._errors:
                try:
                    self._errors[node.id] = self.errors(node.id)
                except Exception:  # an oof file the breakdown cannot read: no figures rather than no proposal
                    self._errors[node.id] = ()
            out += self._errors[node.id]
        out += self.blend(graph, node)
        return tuple(line for line in out if line)

    def _labels(self) -> pd.DataFrame:
        """The training rows' ids, labels and the category columns a breakdown may name, read
        once: only those columns (the whole training file of ten million rows held 5 GB in the
        harness for the rest of the run)."""
        if self._train is None:
            path = self.run.workspace.data_dir / self.spec.train_file
            header = set(read_csv_exact(path, nrows=0).columns)
            categories = [c.name for c in self.run.profile.columns if _breaks_down(c) and c.name in header]
            wanted = [self.spec.id_column, *self.spec.target_columns, *categories]
            self._train = read_csv_exact(path, usecols=list(dict.fromkeys(wanted)))
        return self._train

    def errors(self, node_id: str) -> tuple[str, ...]:
        """The worst deciles of the node's out-of-fold prediction and its worst category level,
        or nothing where the task's shape has no single numeric prediction per unique id."""
        kind = self.spec.public_dict().get("prediction_kind", "value")
        targets = self.spec.target_columns
        if kind not in ("value", "probability") or len(targets) != 1 or not self.spec.ids_unique:
            return ()
        text = read_text_no_follow(self.run.node_dir(node_id) / "output" / "oof.csv")
        if not text.strip():
            return ()
        oof = pd.read_csv(io.StringIO(text), dtype={self.spec.id_column: str})
        column = self.spec.submission_columns[1]
        train = self._labels().drop_duplicates(self.spec.id_column).set_index(self.spec.id_column)
        predictions = oof[[self.spec.id_column, column]].dropna().rename(columns={column: _PREDICTED})
        rows = predictions.join(train, on=self.spec.id_column, how="inner")
        if len(rows) < 10 * _WORST_DECILES:
            return ()
        predicted = pd.to_numeric(rows[_PREDICTED], errors="coerce").to_numpy(float)
        raw = rows[targets[0]]
        if kind == "probability":
            truth = (raw == str(self.spec.positive_label)).to_numpy(float)
        else:
            truth = pd.to_numeric(raw, errors="coerce").to_numpy(float)
        keep = np.isfinite(predicted) & np.isfinite(truth)
        rows, predicted, truth = rows[keep], predicted[keep], truth[keep]
        if len(rows) < 10 * _WORST_DECILES:
            return ()
        error = predicted - truth
        overall = float(np.mean(np.abs(error)))
        head = (
            f"Where it errs (the harness's breakdown of its out-of-fold predictions, {len(rows)} training rows, "
            f"against the training labels; never the holdout's): mean |error| {overall:.4g} overall."
        )
        return (head, self._deciles(predicted, error), self._category(rows, error, overall))

    @staticmethod
    def _deciles(predicted: np.ndarray, error: np.ndarray) -> str:
        bins = pd.qcut(pd.Series(predicted).rank(method="first"), 10, labels=False).to_numpy()
        found = []
        for b in range(10):
            part = bins == b
            found.append((float(np.mean(np.abs(error[part]))), b, predicted[part], error[part]))
        found.sort(key=lambda f: -f[0])
        parts = [
            f"decile {b + 1} (predictions {p.min():.4g} to {p.max():.4g}): mean |error| {mae:.4g}, "
            f"bias {float(np.mean(e)):+.4g}"
            for mae, b, p, e in found[:_WORST_DECILES]
        ]
        return (
            "Worst deciles of the prediction (1 lowest, 10 highest; bias: predicted minus true): "
            + "; ".join(parts)
            + "."
        )

    def _category(self, rows: pd.DataFrame, error: np.ndarray, overall: float) -> str:
        worst: tuple[float, str, str, int, float] | None = None
        for column in self.run.profile.columns:
            if not _breaks_down(column) or column.name not in rows.columns or column.name in self.spec.target_columns:
                continue
            frame = pd.DataFrame({"level": rows[column.name].to_numpy(), "abs": np.abs(error), "err": error})
            grouped = frame.groupby("level").agg(n=("abs", "size"), mae=("abs", "mean"), bias=("err", "mean"))
            grouped = grouped[grouped["n"] >= _MIN_LEVEL_ROWS]
            if grouped.empty:
                continue
            level = grouped["mae"].idxmax()
            found = grouped.loc[level]
            if worst is None or found["mae"] > worst[0]:
                worst = (float(found["mae"]), column.name, str(level), int(found["n"]), float(found["bias"]))
        if worst is None or worst[0] <= overall:
            return ""
        mae, name, level, n, bias = worst
        return (
            f"The category with the worst residuals: {name} = {level!r} ({n} rows), mean |error| {mae:.4g} "
            f"against {overall:.4g} overall, bias {bias:+.4g}."
        )

    def blend(self, graph: SearchGraph, node: Node) -> list[str]:
        """A blend's members and weights, or the blends that use ``node`` and its weight there."""
        lines = []
        members = node.meta.get("fuse")
        if isinstance(members, list) and members:
            weights = self._weights(node.id)
            shown = ", ".join(f"{m} (weight {weights[m]:.3g})" if m in weights else m for m in members)
            lines.append(f"It is a blend of {shown}: {_BLEND_OOF}.")
        for other in graph:
            used = other.meta.get("fuse")
            if other.id == node.id or not isinstance(used, list) or node.id not in used or not other.ok:
                continue
            weight = self._weights(other.id).get(node.id)
            share = f" with weight {weight:.3g}" if weight is not None else ""
            score = f", holdout {other.score:.6g}" if other.score is not None else ""
            lines.append(
                f"It feeds the blend {other.id}{share} (members {', '.join(map(str, used))}{score}): "
                f"{_BLEND_OOF}. Its output/oof.csv decides its weight: an error the other members do not make "
                "(diversity) can help the blend more than a gain in its own score."
            )
        return lines

    def _weights(self, node_id: str) -> dict[str, float]:
        text = read_text_no_follow(self.run.node_dir(node_id) / "output" / "fuse_weights.json")
        try:
            found = json.loads(text) if text.strip() else {}
        except ValueError:
            return {}
        if isinstance(found, dict) and found.get("method", "selection") != "selection":
            return {}  # a stacker predicted: the selection's weights are not what the blend used
        found = found.get("weights", found) if isinstance(found, dict) else {}
        if not isinstance(found, dict):
            return {}
        return {str(k): float(v) for k, v in found.items() if isinstance(v, int | float)}


def _breaks_down(column: ColumnProfile) -> bool:
    """Whether the errors may be broken down by the levels of a profiled column: a category
    (or a yes/no column) of at most ``_MAX_LEVELS`` levels."""
    return column.kind in ("categorical", "boolean") and column.n_unique <= _MAX_LEVELS
