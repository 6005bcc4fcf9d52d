"""Evidence before promotion: re-run a near-tie candidate with other seeds, and stop a run
that has converged when the user asks for it.

A node that would become the best by less than the noise margin (SearchGraph.margin) is
re-run, unchanged, with other seeds before anything else happens; it becomes the best only
if its mean over the seeds beats the best's. The re-runs measure the task's seed spread,
the noise floor that later margins use. Both policies ask ``evidence_action`` first.
"""

from __future__ import annotations

from ..config import SearchConfig
from ..core.graph import SearchGraph
from ..core.protocols import Action
from ..core.vocabulary import Op


def evidence_action(graph: SearchGraph, cfg: SearchConfig) -> Action | None:
    """The next re-run a pending candidate needs; or, for a run that may stop on
    convergence and has not measured its noise floor yet, a re-run of the best node once
    ``convergence_window`` nodes are scored; or None."""
    if graph.evidence is None:
        return None
    groups = graph.rerun_groups()
    candidate, why = graph.pending_evidence(), "beats the best by less than the noise margin"
    if candidate is not None and candidate.id in graph.waived:  # not worth its cost (mlguild.run.gate)
        candidate = None
    if candidate is None and cfg.stop_on_convergence and graph.noise_floor(groups) is None:
        scored = sum(1 for n in graph if n.ok and n.op != Op.RERUN)
        candidate = graph.best() if scored >= cfg.convergence_window else None
        why = "is the best, and the noise floor a converged run is judged by is not measured yet"
    if candidate is None:
        return None
    done = len(groups.get(candidate.id, []))
    if done >= graph.evidence.reruns:
        return None
    return Action(
        Op.RERUN,
        (candidate.id,),
        f"{candidate.id} {why}: re-run {done + 1} of {graph.evidence.reruns} with another seed",
    )


def converged(graph: SearchGraph, cfg: SearchConfig) -> str | None:
    """Why the search has converged, or None: after ``convergence_min_scored`` scored nodes,
    the last ``convergence_window`` scored nodes each gained no more than the noise floor
    over the best before them (only once re-runs have measured the floor)."""
    noise = graph.noise_floor()
    window = cfg.convergence_window
    scored = [n for n in graph if n.ok and n.op != Op.RERUN]
    if noise is None or len(scored) < max(cfg.convergence_min_scored, window + 1):
        return None
    best_key = max(graph.score_of(n).key() for n in scored[:-window])
    for node in scored[-window:]:
        key = graph.score_of(node).key()
        if key - best_key > noise:  # a real gain: more than the seeds alone would give
            return None
        best_key = max(best_key, key)
    return f"the last {window} scored nodes each gained less than the noise floor ({noise:.4g})"
