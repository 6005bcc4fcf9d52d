"""The confirmation audit: a few nodes scored once on the confirmation split, after the search.

The holdout score of the node a run ends with is the best of many noisy scores, so it is
biased upward. When the search has ended (``mlguild.final.stage.finish``, before any refit,
which may then train on these rows too), the harness scores on the sealed confirmation split
(``mlguild.firewall.confirm``) the candidates of the final choice: the best node, the best
single node, the best blend and the constant baseline. Each node is scored there once in
the run's life: the scores are journaled (``confirmation_scored``, with how many nodes the
search had finished: proof that it came after them) and kept in ``audit/confirmation.json``;
a later stage (a resume that found a new best node) scores only nodes not scored before.
No brain, prompt or search rule reads these numbers.

``selection_bias`` is the choice's holdout score minus its confirmation score, oriented so
that a positive number means the holdout flattered it, with a 95% interval from the
bootstrap spreads of both scores (their rows resampled apart).
"""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path
from tempfile import mkdtemp
from typing import TYPE_CHECKING, Any

from ..core.errors import SubmissionError
from ..core.graph import Node
from ..core.vocabulary import Op
from ..firewall.confirm import split_predictions
from ..run.refit import best_blend
from ..rundir import events
from ..scoring.floors import write_prior_submission
from ..task.spec import HOLDOUT_SAMPLE
from ..util.fs import atomic_write

if TYPE_CHECKING:
    from ..run.session import Session

BASELINE = "baseline"  # the constant floor's entry among the scores


def audit_path(session: Session) -> Path:
    return session.run.path / "audit" / "confirmation.json"


def candidates(session: Session) -> dict[str, str]:
    """The nodes the final choice may take, by role: the best node, the best single node and
    the best blend (a role is left out when there is no such node)."""
    graph, roles = session.state.graph, {}
    if session.state.best_id is not None:
        roles["best"] = session.state.best_id
    single = graph.best(exclude_blends=True)
    if single is not None:
        roles["best_single"] = single.id
    blend = best_blend(graph)
    if blend is not None:
        roles["best_blend"] = blend.id
    return roles


def confirm_after_search(session: Session) -> dict | None:
    """Score the final choice's candidates on the confirmation split, each once in the run's
    life (see the module docstring); the run's confirmation record, or None when the run has
    no confirmation split (the manifest says why)."""
    held, state = session.executor.held, session.state
    if held.confirm is None:
        return None
    done: dict[str, Any] = dict(state.confirmation.get("scores", {})) if state.confirmation else {}
    roles = candidates(session)
    wanted = [node_id for node_id in dict.fromkeys(roles.values()) if node_id not in done]
    new: dict[str, Any] = {}
    started = time.monotonic()
    for node_id in wanted:
        new[node_id] = _score_node(session, state.graph[node_id])
    if BASELINE not in done:
        new[BASELINE] = _score_baseline(session)
    if not new:
        return state.confirmation
    finished = [n for n in state.graph if n.finished and n.op != Op.REFIT]
    record = {
        "rows": held.confirm_rows,
        "holdout_rows": len(session.scorers.holdout.expected_ids),
        "scores": new,
        "roles": roles,
        "after_nodes": len(finished),
        "last_node": finished[-1].id if finished else None,
        "seconds": round(time.monotonic() - started, 3),  # what the audit cost
    }
    events.confirmation_scored(session.run.journal, record)
    state.confirmation = {**record, "scores": {**done, **new}}  # as mlguild.rundir.replay rebuilds it
    audit_path(session).parent.mkdir(exist_ok=True)
    atomic_write(audit_path(session), json.dumps(state.confirmation, indent=2))
    return state.confirmation


def _score_node(session: Session, node: Node) -> dict:
    path = session.run.node_dir(node.id) / "output" / "holdout.csv"
    holdout = node.holdout_score if node.holdout_score is not None else node.score
    return {"holdout": holdout, **_score_file(session, path)}


def _score_file(session: Session, path: Path) -> dict:
    """The confirmation score of a predictions file for the holdout inputs, and the bootstrap
    spreads of its holdout and confirmation parts (None where they cannot be resampled)."""
    held, holdout = session.executor.held, session.scorers.holdout
    assert held.confirm is not None
    seed = session.run.config.brain.seed
    try:
        with held.parts(path) as (holdout_part, confirm_part):
            assert confirm_part is not None
            return {
                "confirm": held.confirm.score(confirm_part).value,
                "holdout_spread": holdout.spread(holdout_part, seed=seed),
                "confirm_spread": held.confirm.spread(confirm_part, seed=seed),
            }
    except (SubmissionError, ValueError, OSError) as exc:
        return {"confirm": None, "error": str(exc)[:300]}


def _score_baseline(session: Session) -> dict:
    """The constant floor (the training prior, else the sample submission's template values)
    on both parts."""
    run, folder = session.run, Path(mkdtemp(prefix="mlguild-baseline-"))
    sample = run.workspace.data_dir / HOLDOUT_SAMPLE
    try:
        prior = folder / "prior.csv"
        try:
            made = write_prior_submission(run.spec, run.workspace.data_dir / run.spec.train_file, sample, prior)
        except (ValueError, KeyError, OSError):
            made = False
        path = prior if made else sample
        with split_predictions(path, session.executor.held.ids, run.spec.id_column) as (holdout_part, _):
            try:
                holdout = session.scorers.holdout.score(holdout_part).value
            except (SubmissionError, ValueError):
                holdout = None
        return {"holdout": holdout, **_score_file(session, path), "what": "training prior" if made else "template"}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def selection_bias(confirmation: dict | None, node_id: str, direction: str) -> dict | None:
    """The holdout and confirmation scores of ``node_id`` and the selection bias between
    them (positive: the holdout flattered it), with a 95% bootstrap interval; None when the
    node was not scored on the confirmation split."""
    entry = (confirmation or {}).get("scores", {}).get(node_id)
    if not entry or entry.get("confirm") is None or entry.get("holdout") is None:
        return None
    sign = 1.0 if direction == "maximize" else -1.0
    bias = sign * (entry["holdout"] - entry["confirm"])
    spreads = (entry.get("holdout_spread"), entry.get("confirm_spread"))
    interval = None
    if None not in spreads:
        half = 1.96 * math.hypot(*spreads)
        interval = [round(bias - half, 6), round(bias + half, 6)]
    return {
        "node": node_id,
        "holdout_score": entry["holdout"],
        "confirm_score": entry["confirm"],
        "confirm_rows": confirmation.get("rows") if confirmation else None,
        "selection_bias": round(bias, 6),
        "selection_bias_interval": interval,
    }


def skipped_reason(session: Session) -> str | None:
    """Why the run has no confirmation split (from its manifest), or None when it has one."""
    split = session.run.workspace.manifest().get("split", {})
    if session.executor.held.confirm is not None:
        return None
    return split.get("confirm_skipped") or "the run was created before the confirmation split existed"


def confirmation_line(final_choice: dict | None) -> str | None:
    """One line for people: the choice's holdout score beside its confirmation score and the
    selection bias (or why there is none); None for a run with no final choice, or one made
    before the confirmation split existed."""
    entry = (final_choice or {}).get("confirmation")
    if not entry:
        return None
    if "skipped" in entry:
        return f"confirmation split: none ({entry['skipped']})"
    interval = entry.get("selection_bias_interval")
    spread = f" (95% interval {interval[0]:+.4g} to {interval[1]:+.4g})" if interval else ""
    return (
        f"node {entry['node']}: holdout {entry['holdout_score']:.6g}, confirmation {entry['confirm_score']:.6g} "
        f"on {entry.get('confirm_rows')} rows scored once after the search; selection bias "
        f"{entry['selection_bias']:+.4g}{spread} (positive: the holdout flattered the choice)"
    )


__all__ = [
    "audit_path",
    "confirm_after_search",
    "confirmation_line",
    "selection_bias",
    "skipped_reason",
]
