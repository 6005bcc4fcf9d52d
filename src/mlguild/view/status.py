"""What ``mlguild status`` says about a run beyond its table of nodes, and the whole of it as
one JSON document for scripts (``mlguild status --json``).

The document (``FORMAT`` 1; a field is only ever added, never renamed or removed, within a
format) has these keys:

- ``format``: 1; ``run``: ``{"id", "path"}``; ``task``: ``{"name", "task_type", "metric", "direction"}``
- ``budget``: ``{"time_s", "iterations"}`` (the caps, None when unlimited), ``spent_s``,
  ``sessions``, ``last_stop``; ``search_s`` and ``final_s`` (the search's seconds and the
  final stage's, over all sessions), ``used_share`` (``{"search", "final", "total"}``: each as
  a share of ``time_s``, null without a time budget), ``timed_out`` (search nodes killed by
  their time limit; ``cut_short`` of them under a limit the run's end had shortened),
  ``not_started`` (proposals whose estimated cost exceeded the time left, mlguild.run.gate)
- ``nodes``: one object per node in creation order: ``id``, ``parents``, ``op``, ``status``,
  ``score`` (holdout, by the harness), ``oof_score``, ``title``, ``flags``, ``seconds``,
  ``reference`` (the ladder rung it stands for, or null), ``review`` (the code review's
  status, or null)
- ``best``: ``{"id", "score"}`` or null; ``final``: the final choice (``final/final.json``'s
  fields) or null; ``grade``: the once-only test grade or null
- ``ladder``: the baseline ladder (mlguild.final.ladder): ``metric``, ``direction``, ``rungs``
  (``rung``, ``score``, ``headroom``, ``gained``, ``node``, ``what``)
- ``autonomy``: ``interventions``, ``kinds``, ``nodes_since_last``, ``hours_since_last``,
  ``per_hour`` (mlguild.rundir.interventions)
- ``reviews``: whether the LLM's code reviews paid (mlguild.view.reviews): ``asked``, ``passed``,
  ``revised``, ``revision_failed``, ``unreviewed``, ``skipped``, ``revised_scored``,
  ``revised_compared``, ``revised_better``, ``tokens``, ``cost_usd``
- ``resources``: ``iterations`` and ``iterations_cap``, ``wall_s`` and ``wall_cap_s``,
  ``tokens``, ``cost_usd`` (LLM requests; 0 without an LLM), ``cost_known``
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ..config import Config, load_config
from ..core.vocabulary import Event, FailureKind, Op
from ..final.ladder import ladder
from ..llm.ledger import Ledger
from ..metrics import get_metric
from ..rundir.interventions import autonomy
from ..rundir.replay import RunState
from ..task.folder import TaskSpec
from .reviews import review_tally

FORMAT = 1


def run_config(path: Path) -> Config | None:
    """The run's saved configuration, or None when it cannot be read (status still shows the rest)."""
    try:
        return load_config(path / "config.yaml", [])
    except Exception:  # a hand-broken config.yaml must not hide the run's nodes
        return None


def time_use(records: list[dict[str, Any]], state: RunState, time_s: float | None) -> dict[str, Any]:
    """How the run spent its time: the search's seconds (each session's, up to its
    ``session_ended``) and the final stage's (after it), each as a share of ``time_s``, and
    how many search nodes their time limit killed or the estimate of their cost kept from starting."""
    search = final = latest = 0.0
    ended: float | None = None  # a session killed before its end was all search
    for rec in [*records, {"type": Event.SESSION_STARTED}]:  # a sentinel closes the last session
        if rec["type"] == Event.SESSION_STARTED:
            stop = latest if ended is None else ended
            search, final = search + stop, final + max(0.0, latest - stop)
            ended, latest = None, 0.0
        elif rec["type"] == Event.SESSION_ENDED:
            ended = float(rec.get("session_elapsed_s", 0.0))
        if "session_elapsed_s" in rec:
            latest = max(latest, float(rec["session_elapsed_s"]))
    nodes = [n for n in state.graph if n.op not in (Op.REFIT, Op.EDA)]
    timed_out = [n for n in nodes if n.status == FailureKind.TIMEOUT]
    share = (lambda seconds: round(seconds / time_s, 4)) if time_s else (lambda seconds: None)
    return {
        "search_s": round(search, 3),
        "final_s": round(final, 3),
        "used_share": {"search": share(search), "final": share(final), "total": share(search + final)},
        "timed_out": len(timed_out),
        "cut_short": sum(1 for n in timed_out if n.timing.get("cut_short")),
        "not_started": sum(1 for n in nodes if n.status == FailureKind.OVER_BUDGET),
    }


def resources(records: list[dict[str, Any]], state: RunState, config: Config | None) -> dict[str, Any]:
    """Iterations and wall clock against their caps, and the LLM's tokens and cost."""
    calls = [r for r in records if r["type"] == Event.LLM_CALL]
    ledger = Ledger.from_records(calls)
    return {
        "iterations": sum(1 for n in state.graph if n.op not in (Op.REFIT, Op.EDA)),
        "iterations_cap": config.budget.iterations if config else None,
        "wall_s": round(state.spent_s, 1),
        "wall_cap_s": config.budget.time_s if config else None,
        "tokens": ledger.total_tokens,
        "cost_usd": round(ledger.total_cost_usd, 6),
        "cost_known": ledger.cost_known,
    }


def resources_words(found: dict[str, Any]) -> str:
    """The resources spent, in words (the value of ``resources_line``)."""
    cap = found["iterations_cap"]
    wall = found["wall_cap_s"]
    cost = f"${found['cost_usd']:.4f}" + ("" if found["cost_known"] else " (some unpriced)")
    return (
        f"{found['iterations']} of {cap if cap is not None else '∞'} iterations; "
        f"{found['wall_s']:.0f} s of {f'{wall:g} s' if wall is not None else '∞'} wall clock; "
        f"{found['tokens']:,} tokens; {cost}"
    )


def resources_line(found: dict[str, Any]) -> str:
    return f"resources: {resources_words(found)}"


def autonomy_words(found: dict[str, Any]) -> str:
    """The autonomy count, in words (the value of ``autonomy_line``)."""
    if not found["interventions"]:
        return f"no intervention; {found['nodes_since_last']} nodes, {found['hours_since_last']:.2f} h unattended"
    kinds = ", ".join(f"{k}×{n}" if n > 1 else k for k, n in Counter(found["kinds"]).items())
    per_hour = f"{found['per_hour']:g} per hour" if found["per_hour"] is not None else "— per hour"
    return (
        f"{found['interventions']} interventions ({kinds}), {per_hour}; since the last: "
        f"{found['nodes_since_last']} nodes, {found['hours_since_last']:.2f} h"
    )


def autonomy_line(found: dict[str, Any]) -> str:
    return f"autonomy: {autonomy_words(found)}"


def run_ladder(records: list[dict[str, Any]], state: RunState, metric: str, config: Config | None) -> dict[str, Any]:
    reference = config.final.reference_score if config else None
    return ladder(records, state.graph, state.best_id, state.final_choice, metric, reference)


def run_standing(path: Path, metric: str, state: RunState, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The baseline ladder, the autonomy count and the resources of the run at ``path``: what
    ``mlguild status`` (as lines and in its JSON document) and the run report show."""
    config = run_config(path)
    return {
        "ladder": run_ladder(records, state, metric, config),
        "autonomy": autonomy(records, state.graph, state.spent_s),
        "resources": resources(records, state, config),
        "reviews": review_tally(state.graph, records, get_metric(metric).direction),
    }


def status_document(path: Path, spec: TaskSpec, state: RunState, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The run at ``path`` as the JSON document described above."""
    config = run_config(path)
    graph = state.graph
    best = graph.nodes.get(state.best_id) if state.best_id else None
    nodes = [
        {
            "id": n.id,
            "parents": list(n.parents),
            "op": str(n.op),
            "status": str(n.status),
            "score": n.score,
            "oof_score": n.oof_score,
            "title": n.title,
            "flags": list(n.flags),
            "seconds": n.timing.get("exec_s"),
            "reference": n.meta.get("reference"),
            "review": n.meta["review"].get("status") if isinstance(n.meta.get("review"), dict) else None,
        }
        for n in graph
    ]
    return {
        "format": FORMAT,
        "run": {"id": path.name, "path": str(path)},
        "task": {
            "name": spec.name,
            "task_type": spec.task_type,
            "metric": spec.metric,
            "direction": get_metric(spec.metric).direction,
        },
        "budget": {
            "time_s": config.budget.time_s if config else None,
            "iterations": config.budget.iterations if config else None,
            "spent_s": round(state.spent_s, 3),
            "sessions": state.sessions,
            "last_stop": state.finished_reason,
            **time_use(records, state, config.budget.time_s if config else None),
        },
        "nodes": nodes,
        "best": {"id": best.id, "score": best.score} if best else None,
        "final": state.final_choice,
        "grade": state.final_grade,
        **run_standing(path, spec.metric, state, records),
    }
