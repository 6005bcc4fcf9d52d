"""The run report's plots (``mlguild.view.report``), each an inline SVG: the score over time,
failures by class, the LLM's tokens and cost, the final model's feature importances. They
need matplotlib (the ``web`` extra); without it there are none, and a note says how to get
them."""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

from .importance import final_importance
from .runs import RunView


def plots(view: RunView) -> tuple[list[tuple[str, str]], str]:
    """(title, inline SVG) of each plot, and a note when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "no plots: matplotlib is missing (pip install -e '.[web]')"
    plt.rcParams.update({"font.size": 9, "svg.fonttype": "none", "svg.hashsalt": "mlguild"})
    plots = [("Score over time", _score_plot(plt, view))]
    failures = view.failures()
    if failures:
        plots.append(("Failures by class", _failure_plot(plt, failures)))
    if view.calls:
        plots.append(("LLM tokens and cost over time", _llm_plot(plt, view)))
    whose, importance = final_importance(view)
    if importance:
        plots.append((f"Feature importance ({whose})", _importance_plot(plt, importance)))
    return plots, ""


def _importance_plot(plt: Any, pairs: list[tuple[str, float]]) -> str:
    """The final model's largest importances as horizontal bars, the largest on top."""
    fig, ax = plt.subplots(figsize=(7, 0.25 * len(pairs) + 0.8))
    names = [name if len(name) <= 40 else name[:39] + "…" for name, _ in reversed(pairs)]
    ax.barh(names, [value for _, value in reversed(pairs)], color="#2563eb")
    ax.set_xlabel("importance (scaled to sum 1 over every feature)")
    return _svg(plt, fig)


def _svg(plt: Any, fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]  # inline: no XML prolog or doctype


def _score_plot(plt: Any, view: RunView) -> str:
    t0 = view.records[0]["ts"] if view.records else 0.0
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    by_worker: dict[int, list[tuple[float, float]]] = {}
    for n in view.state.graph:
        if n.ok and n.id in view.finished and n.score is not None:
            by_worker.setdefault(view.worker.get(n.id, 1), []).append(((view.finished[n.id] - t0) / 60, n.score))
    for worker, points in sorted(by_worker.items()):
        xs, ys = zip(*points, strict=True)
        ax.scatter(xs, ys, s=14, alpha=0.75, label=f"worker {worker}")
    scores = {n.id: n.score for n in view.state.graph}
    steps = [((ts - t0) / 60, scores[i]) for ts, i in view.best_changes if scores.get(i) is not None]
    if steps:
        end = max((view.finished.get(n.id, t0) - t0) / 60 for n in view.state.graph)
        xs, ys = zip(*([*steps, (max(end, steps[-1][0]), steps[-1][1])]), strict=True)
        ax.step(xs, ys, where="post", color="#d4a017", linewidth=2, label="best so far")
    if view.floor is not None:
        ax.axhline(view.floor, color="#888", linestyle="--", linewidth=1, label="floor")
    ax.set_xlabel("minutes")
    metric = view.spec.get("metric", "")
    pooled = any(n.holdout_score is not None for n in view.state.graph)  # a small holdout: ranked by the pooled score
    ax.set_ylabel(f"{metric}, pooled (holdout and out-of-fold)" if pooled else f"holdout {metric}")
    ax.grid(alpha=0.3)
    if by_worker or steps:
        ax.legend(loc="best", fontsize=8)
    return _svg(plt, fig)


def _failure_plot(plt: Any, failures: Counter[str]) -> str:
    items = failures.most_common()
    fig, ax = plt.subplots(figsize=(6, 0.4 + 0.35 * len(items)))
    ax.barh([k for k, _ in items][::-1], [v for _, v in items][::-1], color="#e45756")
    ax.set_xlabel("nodes")
    return _svg(plt, fig)


def _llm_plot(plt: Any, view: RunView) -> str:
    t0 = view.records[0]["ts"] if view.records else 0.0
    xs, tokens, cost = [], [], []
    total_t, total_c = 0, 0.0
    for c in view.calls:
        total_t += int(c.get("input_tokens") or 0) + int(c.get("output_tokens") or 0)
        total_c += float(c.get("cost_usd") or 0.0)
        xs.append((c["ts"] - t0) / 60)
        tokens.append(total_t)
        cost.append(total_c)
    fig, ax = plt.subplots(figsize=(7.5, 3))
    ax.plot(xs, tokens, color="#4c78a8", label="tokens")
    ax.set_xlabel("minutes")
    ax.set_ylabel("tokens (cumulative)")
    other = ax.twinx()
    other.plot(xs, cost, color="#e45756", label="USD")
    other.set_ylabel("USD (cumulative)")
    return _svg(plt, fig)


__all__ = ["plots"]
