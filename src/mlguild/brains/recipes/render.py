"""Rendering a recipe meta into a standalone script.

The script's text lives in Jinja templates under ``templates/`` (prompts and code are data,
not strings in Python). Templates write each import next to the code that needs it; the
renderer hoists them to the top, so every included piece stays self-contained while the
finished script reads like one a person wrote.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from ...metrics import get_metric, per_column
from ...task import column_parsers
from ...task.column_kinds import UNUSABLE
from .catalog import RECIPES, SCRIPT_TEMPLATES
from .draft import RELATIVE_ERRORS
from .excerpt import excerpt
from .moves import MANY_LEVELS

TEMPLATES = Path(__file__).parent / "templates"
_IMPORT = re.compile(r"^(import \w|from [\w.]+ import )")
# A script's model fits on all the threads it is given from this many training rows on, on one
# below (templates/threads.py.j2 says why).
THREADS_FROM_ROWS = 10_000


def _literal(value: Any) -> str:
    """A Python literal for a JSON-like value; floats without binary noise (0.0125, not 0.0125000001)."""
    if isinstance(value, float):
        return repr(float(f"{value:.6g}"))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _lines_literal(value: dict[str, list[Any]]) -> str:
    """A dict of lists with one key per line: long column lists stay readable."""
    if not value:
        return "{}"
    return "{\n" + "".join(f"    {_literal(k)}: {_literal(v)},\n" for k, v in value.items()) + "}"


def _dict_literal(params: dict[str, Any]) -> str:
    """``dict(a=1, b=2)`` over several lines: one hyperparameter per line reads (and diffs) best."""
    if not params:
        return "dict()"
    body = "".join(f"    {key}={_literal(value)},\n" for key, value in params.items())
    return "dict(\n" + body + ")"


def _docstring_safe(text: Any) -> str:
    """Free text (a task name, a plan summary) made safe inside a triple-quoted docstring."""
    return str(text).replace("\\", "\\\\").replace('"""', "'''")


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["py"] = _literal
    env.filters["dict_literal"] = _dict_literal
    env.filters["py_lines"] = _lines_literal
    env.filters["doc"] = _docstring_safe
    return env


def _hoist_imports(code: str) -> str:
    """Gather every top-level import line into the ``#<imports>`` marker's place: standard
    library first, then third party, each sorted and deduplicated."""
    lines = code.splitlines()
    found = _merge_from_imports({line for line in lines if _IMPORT.match(line)})
    stdlib = set(sys.stdlib_module_names)

    def module(line: str) -> str:
        return line.split()[1].split(".")[0]

    def order(line: str) -> tuple[bool, str]:
        return line.startswith("from "), line.split()[1]  # plain imports first, as isort does

    std = sorted((line for line in found if module(line) in stdlib), key=order)
    block = std + [""] + sorted((line for line in found if module(line) not in stdlib), key=order)
    out = []
    for line in lines:
        if line == "#<imports>":
            out.extend(block)
        elif not _IMPORT.match(line):
            out.append(line)
    return _tidy_blank_lines(out)


def _merge_from_imports(found: set[str]) -> set[str]:
    """``from m import a`` and ``from m import b, c`` (written by two templates) become
    ``from m import a, b, c`` where that fits on one line."""
    names: dict[str, set[str]] = {}
    for line in found:
        if line.startswith("from ") and "(" not in line:
            module, imported = line[len("from ") :].split(" import ", 1)
            names.setdefault(module, set()).update(n.strip() for n in imported.split(","))
    merged = {line for line in found if not (line.startswith("from ") and "(" not in line)}
    for module, names_imported in names.items():
        line = f"from {module} import {', '.join(sorted(names_imported))}"
        if len(line) <= 100:
            merged.add(line)
        else:
            merged.update(line for line in found if line.startswith(f"from {module} import "))
    return merged


def _tidy_blank_lines(lines: list[str]) -> str:
    """PEP 8 spacing after templates were stitched together: two blank lines around
    top-level functions, at most one elsewhere, none right under a section header."""
    out: list[str] = []
    in_def = False
    for line in lines:
        if not line.strip():
            if out and out[-1].strip() and not out[-1].startswith("# ----"):
                out.append("")
            continue
        top_level = not line[0].isspace()
        starts_def = line.startswith(("def ", "class ", "@"))
        if top_level and (starts_def or in_def) and not (starts_def and out and out[-1].startswith("@")):
            while out and not out[-1].strip():
                out.pop()
            # a comment directly above a def belongs to it
            anchor = len(out)
            while (
                starts_def and anchor and out[anchor - 1].startswith("#") and not out[anchor - 1].startswith("# ----")
            ):
                anchor -= 1
            out[anchor:anchor] = ["", ""]
        if top_level and not line.startswith((")", "]", "}")):
            in_def = starts_def
        out.append(line)
    return "\n".join(out).rstrip("\n") + "\n"


# How the script scores its out-of-fold predictions, per registry metric: an import and an
# expression over `truth` and `prediction` (as the script builds them for that kind).
_CV = {
    "accuracy": ("from sklearn.metrics import accuracy_score", "accuracy_score(truth, prediction)"),
    "error_rate": ("from sklearn.metrics import accuracy_score", "1.0 - accuracy_score(truth, prediction)"),
    "roc_auc": ("from sklearn.metrics import roc_auc_score", "roc_auc_score(truth, prediction)"),
    "binary_logloss": ("from sklearn.metrics import log_loss", "log_loss(truth, prediction, labels=[0, 1])"),
    "logloss": ("from sklearn.metrics import log_loss", "log_loss(truth, prediction, labels=CLASSES)"),
    "f1": (
        "from sklearn.metrics import f1_score",
        "f1_score(truth, prediction, pos_label=F1_POSITIVE, average='binary')",
    ),
    "f1_macro": ("from sklearn.metrics import f1_score", "f1_score(truth, prediction, average='macro')"),
    "mcc": ("from sklearn.metrics import matthews_corrcoef", "matthews_corrcoef(truth, prediction)"),
    "rmse": ("from sklearn.metrics import root_mean_squared_error", "root_mean_squared_error(truth, prediction)"),
    "mse": ("from sklearn.metrics import mean_squared_error", "mean_squared_error(truth, prediction)"),
    "rmsle": (
        "from sklearn.metrics import root_mean_squared_log_error",
        "root_mean_squared_log_error(truth, prediction)",
    ),
    "mae": ("from sklearn.metrics import mean_absolute_error", "mean_absolute_error(truth, prediction)"),
    "r2": ("from sklearn.metrics import r2_score", "r2_score(truth, prediction)"),
    "pearson": ("from scipy.stats import pearsonr", "float(pearsonr(truth, prediction)[0])"),
    "spearman": ("from scipy.stats import spearmanr", "float(spearmanr(truth, prediction)[0])"),
    "qwk": (
        "from sklearn.metrics import cohen_kappa_score",
        "cohen_kappa_score(truth.astype(int), prediction.astype(int), weights='quadratic')",
    ),
}
# A stand-in when the task's metric has no scikit-learn twin here: its nearest, else by prediction kind.
_NEAREST = {"group_log_mae": "mae", "smape": "mae"}
_FALLBACK = {"label": "accuracy", "probability": "roc_auc", "class_probabilities": "logloss", "value": "rmse"}


def _map_cv(k: int) -> dict[str, str]:
    """MAP@k has no scikit-learn twin: the script defines it (Kaggle's mapk, as the harness's)."""
    helper = f"""

def mean_average_precision(truth, prediction, k={k}):
    \"\"\"MAP@k of ranked lists (space-separated text) against the relevant items.\"\"\"
    scores = []
    for actual, ranked in zip(truth, np.ravel(prediction), strict=True):
        relevant, seen, hits, total = set(str(actual).split()), set(), 0, 0.0
        for i, item in enumerate(str(ranked).split()[:k]):
            if item in relevant and item not in seen:
                hits += 1
                total += hits / (i + 1)
            seen.add(item)
        scores.append(total / min(len(relevant), k) if relevant else 0.0)
    return float(np.mean(scores))

"""
    return {
        "name": "map_at_k",
        "import_line": helper,
        "expression": "mean_average_precision(truth, prediction)",
        "note": "",
    }


def _cv_metric(metric: str) -> dict[str, str]:
    kind = get_metric(metric).prediction
    if kind == "label_set":  # the several-target template scores its sets itself (multi.py.j2)
        return {"name": metric, "import_line": "", "expression": "", "note": ""}
    name = metric if metric in _CV else _NEAREST.get(metric, _FALLBACK[kind])
    note = "" if name == metric else f"{metric} has no scikit-learn twin here; {name} stands in for it."
    import_line, expression = _CV[name]
    return {"name": name, "import_line": import_line, "expression": expression, "note": note}


# The parser each column kind needs (see templates/features/columns.py.j2).
_PARSERS = {
    "boolean": "parse_boolean",
    "datetime": "parse_datetime",
    "epoch": "parse_epoch",
    "time": "parse_time_of_day",
    "list": "list_items",
}


def _parsers_source(kinds: dict[str, list[str]]) -> str:
    """The column parsers a script needs for the kinds of its columns, as code: every
    script parses numbers (its numeric columns, a regression target) and text."""
    wanted = {"as_text", "parse_number", *(_PARSERS[k] for k in kinds if k in _PARSERS)}
    return excerpt(Path(column_parsers.__file__).read_text(), frozenset(wanted))


def _columns(task: dict[str, Any], profile: dict[str, Any], features: dict[str, Any]) -> dict[str, Any]:
    """Which columns the script leaves out, and each other column's kind (numeric ones are
    not listed: that is the default)."""
    repaired = [str(c) for c in features.get("drop_columns") or []]
    drop = [c["name"] for c in profile.get("columns", []) if c["kind"] in UNUSABLE]
    drop += [c for c in repaired if c not in drop]
    kinds: dict[str, list[str]] = {}
    for c in profile.get("columns", []):
        kind = "text" if c["name"] in task.get("text_columns", []) else c["kind"]
        if c["name"] not in drop and kind != "numeric":
            kinds.setdefault(kind, []).append(c["name"])
    return {"drop": drop, "kinds": kinds, "repaired": repaired}


def _list_k(task: dict[str, Any]) -> int:
    """How many items a ranked list holds: the metric's k (MAP@k), 5 by default as its own."""
    return int((task.get("metric_params") or {}).get("k", 5))


def lookup_tables(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The task's lookup tables as the script joins them: file, the table's key, the rows' key."""
    tables = task.get("tables") or []
    return [{"file": t["file"], "key": list(t["key"]), "on": list(t.get("train_key") or t["key"])} for t in tables]


def prediction_kind(task: dict[str, Any]) -> str:
    return get_metric(task["metric"]).prediction


def render_script(task: dict[str, Any], profile: dict[str, Any], meta: Mapping[str, Any], summary: str) -> str:
    """The complete script for ``meta`` (a recipe meta, see ``catalog.draft_meta``)."""
    recipe = RECIPES[meta["recipe"]]
    kind = prediction_kind(task)
    classification = task["task_type"] in ("binary", "multiclass")
    metric_positive = None
    if task["metric"] == "f1":
        metric_positive = str(task.get("metric_params", {}).get("positive_label") or task.get("positive_label") or "1")
    cols = _columns(task, profile, meta["features"])
    context = {
        "task": task,
        "recipe": recipe,
        "summary": summary,
        "target": task["target_columns"][0],
        "kind": kind,
        "classification": classification,
        "positive": str(task.get("positive_label") or "1"),
        "classes": [str(c) for c in (task.get("classes") or [])],
        "metric_positive": metric_positive,
        "clip_at_zero": per_column(task["metric"]) in RELATIVE_ERRORS,
        # A metric averaged over the groups of an input column: the target is fitted divided by
        # its group's spread (script.py.j2, "target").
        "group_scale": (task.get("metric_params") or {}).get("group_column")
        if get_metric(task["metric"]).strata
        else None,
        "cols": cols,
        "parsers": _parsers_source(cols["kinds"]),
        "encoding": recipe.encoding,
        "frame": recipe.encoding in ("native", "ordinal", "catboost"),
        "estimator": recipe.estimator(classification),
        "params": meta["params"],
        "features": meta["features"],
        "run": meta["run"],
        # Settings a meta from an older version may lack (or an undo may set to None).
        # The fold hook needs feature frames whose index is the row number (native, ordinal).
        "target_encoding": bool(meta["features"].get("target_encoding")) and recipe.encoding in ("native", "ordinal"),
        "ratios": bool(meta["features"].get("ratios")),
        "screen": int(meta["features"].get("screen") or 0)
        if recipe.encoding in ("native", "ordinal", "catboost")
        else 0,
        "safe": bool(meta["features"].get("safe")),
        "n_seeds": int(meta["run"].get("seeds") or 1),
        "many_levels": MANY_LEVELS,
        "cv": _map_cv(_list_k(task)) if kind == "ranked_list" else _cv_metric(task["metric"]),
        "list_k": _list_k(task),
        # Folds ordered in time (templates/folds_time.py.j2) when the task names a time column.
        "time_column": task.get("time_column"),
        # Lookup tables joined to every part by their keys (templates/lookup_tables.py.j2).
        "lookup_tables": lookup_tables(task),
        # Whether the model's fit uses threads (templates/threads.py.j2).
        "n_train": int(profile.get("n_train") or 0),
        "threads_from_rows": THREADS_FROM_ROWS,
        # The raw columns a script reads once its features are built; the others are dropped
        # then (templates/features/columns.py.j2). None: all are kept.
        "raw_kept": None,
    }
    template = SCRIPT_TEMPLATES.get(recipe.modality, "script.py.j2")
    if template == "rank.py.j2":
        context.update(_ranking_context(task))
    elif template == "lists.py.j2":
        context["learned"] = recipe.model == "lists_lightgbm"
    elif template == "spans.py.j2":
        context["learned"] = recipe.model == "span_lightgbm"
    elif len(task["target_columns"]) > 1 or kind == "label_set":
        context.update(_several_targets(task, recipe.model, context))
        template = "multi.py.j2"
    if template in ("script.py.j2", "multi.py.j2"):  # a ranking writes its key columns from them: it keeps all
        time_column = [context["time_column"]] if context["time_column"] else []
        scale = [context["group_scale"]] if context["group_scale"] else []
        context["raw_kept"] = [task["id_column"], *task["target_columns"], *time_column, *scale]
    code = _environment().get_template(template).render(**context)
    return _hoist_imports(code)


# Model templates whose regressor takes a matrix of targets and fits them at once: one fit
# instead of one per target, at no loss (Ridge solves each column independently; a forest
# splits on the mean decrease over the targets, which is how a multi-output forest works).
_JOINT_MODELS = ("linear", "forest")
# The most labels of a label-set task that get a model each (the most frequent: each costs a
# model per fold, and a label few rows hold is seldom predicted right).
MAX_SET_LABELS = 50


def _several_targets(task: dict[str, Any], model: str, context: dict[str, Any]) -> dict[str, Any]:
    """What the several-target template needs beyond the one-target context: the targets,
    whether one model fits them all, and the per-column metric its guide score and label
    thresholds use."""
    column_metric = per_column(task["metric"])
    joint = (
        not context["classification"]
        and model in _JOINT_MODELS
        and not context["target_encoding"]
        and not context["screen"]
    )
    label_set = prediction_kind(task) == "label_set"  # one column of label sets: a 0/1 target per label
    return {
        "targets": list(task["target_columns"]),
        "label_set": label_set,
        "max_labels": MAX_SET_LABELS,
        "joint": joint,
        "cv": _cv_metric(column_metric),
        "clip_at_zero": column_metric in RELATIVE_ERRORS,
        "tune_threshold": (context["kind"] == "label" and column_metric == "f1") or label_set,
        "threshold_scope": "micro" if task["metric"] in ("multilabel_f1_micro", "f1") else "column",
        # one outcome spread over the 0/1 target columns: each row's probabilities sum to 1
        "one_outcome": task["metric"] == "logloss_columns",
    }


def _ranking_context(task: dict[str, Any]) -> dict[str, Any]:
    """What the grouped-ranking template needs beyond the common context: the score column,
    the metric's cut-off and gain, the relevant label of a text target. Fold hooks (target
    encoding, screening) are not part of it."""
    params = task.get("metric_params") or {}
    keys = set(task.get("key_columns") or [])
    score_columns = [c for c in task["submission_columns"][1:] if c not in keys]
    labels = task.get("positive_label")
    return {
        "score_column": score_columns[0] if score_columns else None,  # none: a ranked file
        "group_column": task.get("group_column") or task["id_column"],
        "rank_k": int(params.get("k", 10)),
        "gain": str(params.get("gain", "linear")),
        "positive": None if labels is None else str(labels),
        "target_encoding": False,
        "screen": 0,
    }
