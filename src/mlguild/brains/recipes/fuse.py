"""The fuse operator: one script that blends the predictions of several scored nodes.

Any brain can use it (a blend needs no LLM and no knowledge of how the members were built):
the members' predictions are files the harness copies into the node, and the weights are
fitted inside the script on the members' out-of-fold predictions for the training rows,
which are the only labels a script can see. The holdout stays an honest test of the blend.
"""

from __future__ import annotations

from typing import Any

from ...core.errors import MoveUnavailable
from ...core.meta import NodeMeta
from ...core.protocols import Context, Proposal
from ...metrics import get_metric, per_column
from .catalog import recipe_modality
from .render import _cv_metric, _environment, _hoist_imports, _list_k, _map_cv, _ranking_context, prediction_kind

# A stacker is offered beside the selection from this many members on: with two, it learns
# little that the selection's weights do not, except from the original features, and those it
# may well learn (its cross-validated score decides).
STACK_MIN_MEMBERS = 2


def fuse_proposal(context: Context) -> Proposal:
    """A blend of ``context.parents`` (the Action's parents, best first)."""
    task = context.task
    ranked = recipe_modality(task) == "grouped_ranking"  # ids repeat: rows match by (group, keys)
    if not task.get("ids_unique", True) and not ranked:
        raise MoveUnavailable(
            "a blend aligns predictions by id, and this task's ids repeat", "set search.fuse_every=0 for this task"
        )
    if task.get("ranked_file"):  # its members' files hold no scores to blend, only an order
        raise MoveUnavailable(
            "a blend weighs its members' scores, and this task's submissions are ranked files with none",
            "set search.fuse_every=0 for this task",
        )
    if recipe_modality(task) == "text_spans":  # one phrase a row: nothing to average
        raise MoveUnavailable(
            f"a blend weighs its members' predictions, and this task's ({task['metric']}) are phrases of text",
            "set search.fuse_every=0 for this task",
        )
    several = len(task["target_columns"]) > 1
    if several and (
        prediction_kind(task) not in ("value", "probability", "label")
        or sorted(task["target_columns"]) != sorted(task["submission_columns"][1:])
    ):
        raise MoveUnavailable(
            f"a blend of several targets blends one submission column per target; this task has the targets "
            f"{task['target_columns']} and the columns {task['submission_columns'][1:]}",
            "set search.fuse_every=0 for this task",
        )
    members = [p.node_id for p in context.parents]
    if len(members) < 2:
        raise ValueError("a fuse needs at least two parents")
    lines = [f"## Fuse: blend of {', '.join(members)}", "", "**Members:**"]
    for p in context.parents:
        what = p.meta.get("summary") or p.meta.get("recipe") or p.op
        lines.append(f"- `{p.node_id}` ({_score(p.score, task)}): {str(what).splitlines()[0][:160]}")
    why = (
        "models from different branches make different errors, so a weighted average is usually "
        "better than its best member; the weights are fitted on out-of-fold predictions, so the "
        "holdout still measures the blend honestly"
    )
    what = "weights by greedy ensemble selection on the members' out-of-fold predictions"
    if ranked:
        what += ", blending each member's scores as ranks within their group"
    elif recipe_modality(task) == "ranked_lists":
        what += ", fusing the members' lists by weighted reciprocal ranks"
    elif prediction_kind(task) == "label_set":
        what += ", averaging the members' label probabilities and reading the sets at the blend's own threshold"
    elif not several and prediction_kind(task) != "ranked_list":
        what += (
            "; beside it, a stacker (a linear model on those predictions, LightGBM on them and the original "
            "features) with its own cross-validation, and whichever cross-validates better predicts"
        )
    lines += [
        "",
        f"**What:** {what}" + (", for each target column on its own." if several else "."),
        f"**Why:** {why}.",
    ]
    summary = f"A weighted blend of {', '.join(members)}: {why}."
    if ranked:
        code = render_rank_fuse(task, members, summary)
    elif recipe_modality(task) == "ranked_lists":  # lists by weighted reciprocal-rank fusion
        template = _environment().get_template("fuse_lists.py.j2")
        target = task["target_columns"][0]
        code = _hoist_imports(
            template.render(task=task, members=members, summary=summary, target=target, list_k=_list_k(task))
        )
    elif prediction_kind(task) == "label_set":
        template = _environment().get_template("fuse_sets.py.j2")
        code = _hoist_imports(
            template.render(task=task, members=members, summary=summary, target=task["target_columns"][0])
        )
    else:
        code = render_fuse(task, members, summary)
    meta: NodeMeta = {"brain": "recipes", "fuse": members, "summary": f"blend of {', '.join(members)}"}
    return Proposal(plan="\n".join(lines) + "\n", code=code, meta=meta, title=f"Blend of {', '.join(members)}")


def render_fuse(task: dict[str, Any], members: list[str], summary: str, stack: bool = True) -> str:
    """The blend script of one target: the selection's weighted average, and with ``stack``
    a stacker beside it (templates/fuse_stack.py.j2), whichever cross-validates better."""
    if len(task["target_columns"]) > 1:
        return _render_fuse_several(task, members, summary)
    kind = prediction_kind(task)
    list_k = 0
    if kind == "ranked_list":  # a single label scored by MAP@k: blend the class probabilities, then rank
        kind, list_k = "label", _list_k(task)
    cv = _map_cv(list_k) if list_k else _cv_metric(task["metric"])
    metric_positive = None
    if task["metric"] == "f1":
        metric_positive = str(task.get("metric_params", {}).get("positive_label") or task.get("positive_label") or "1")
    code = (
        _environment()
        .get_template("fuse.py.j2")
        .render(
            task=task,
            members=members,
            summary=summary,
            kind=kind,
            cv=cv,
            target=task["target_columns"][0],
            positive=str(task.get("positive_label") or "1"),
            classes=[str(c) for c in (task.get("classes") or [])],
            metric_positive=metric_positive,
            greater_is_better=get_metric(cv["name"]).direction == "maximize",
            list_k=list_k,
            # A ranked list (MAP@k) blends scores into lists: no stacker learns that shape.
            stack=stack and not list_k,
            stack_min=STACK_MIN_MEMBERS,
        )
    )
    return _hoist_imports(code)


def _render_fuse_several(task: dict[str, Any], members: list[str], summary: str) -> str:
    """The blend of several target columns: weights per column, fitted on that column's
    out-of-fold predictions with the task's per-column metric."""
    kind, column_metric = prediction_kind(task), per_column(task["metric"])
    cv = _cv_metric(column_metric)
    code = (
        _environment()
        .get_template("fuse_multi.py.j2")
        .render(
            task=task,
            members=members,
            summary=summary,
            kind=kind,
            cv=cv,
            targets=list(task["target_columns"]),
            positive=str(task.get("positive_label") or "1"),
            tune_threshold=kind == "label" and column_metric == "f1",
            threshold_scope="micro" if task["metric"] in ("multilabel_f1_micro", "f1") else "column",
            greater_is_better=get_metric(cv["name"]).direction == "maximize",
        )
    )
    return _hoist_imports(code)


def render_rank_fuse(task: dict[str, Any], members: list[str], summary: str) -> str:
    """The blend of a grouped-ranking task: a weighted mean of within-group ranks."""
    template = _environment().get_template("fuse_rank.py.j2")
    context = _ranking_context(task)
    code = template.render(task=task, members=members, summary=summary, target=task["target_columns"][0], **context)
    return _hoist_imports(code)


def _score(score: float | None, task: dict[str, Any]) -> str:
    return "no score" if score is None else f"holdout {task['metric']} {score:.5g}"
