"""Improve moves are chosen by expected gain per second, learned from this task's history."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from mlguild.brains.recipes.choice import MoveStats, choose, move_stats
from mlguild.core.protocols import Context, HistoryItem


def _item(node_id, score, exec_s, move=None, parent=None, op="improve"):
    meta = {"brain": "recipes", **({"move": move, "parent": parent} if move else {})}
    return HistoryItem(
        node_id, op if move else "draft", "scored" if score is not None else "crash", score, meta, exec_s
    )


def _context(history, direction="maximize", timeout=600.0):
    return Context(
        task={},
        description="",
        profile={},
        parents=(),
        history=tuple(history),
        direction=direction,
        script_timeout_s=timeout,
        seed=0,
        iteration=len(history),
    )


def _options(*names):
    return [((SimpleNamespace(name=n),), {"move": n}) for n in names] + [
        ((SimpleNamespace(name=a), SimpleNamespace(name=b)), {"move": f"{a}+{b}"})
        for a, b in [names[:2]]
        if len(names) >= 2
    ]


def _chosen(options, parent, context, seed=0):
    (_moves, meta), why = choose(options, parent, context, random.Random(seed))
    return meta["move"], why


def test_with_no_history_every_move_ties_and_the_seeded_draw_decides():
    context = _context([_item("n1", 0.8, 10.0)])
    options = _options("a", "b", "c")[:3]
    picks = {_chosen(options, "n1", context, seed)[0] for seed in range(40)}
    assert picks == {"a", "b", "c"}
    assert "not tried on this task yet" in _chosen(options, "n1", context)[1]


def test_a_move_that_helped_before_is_preferred_and_one_that_hurt_is_avoided():
    history = [
        _item("n1", 0.80, 10.0),
        _item("n2", 0.85, 10.0, "good", "n1"),
        _item("n3", 0.75, 10.0, "bad", "n1"),
        _item("n4", 0.82, 10.0),
    ]
    move, why = _chosen(_options("bad", "good"), "n4", _context(history))
    assert move == "good" and "1 earlier try" in why
    # "bad" lost to an untried move as well
    assert _chosen([o for o in _options("bad", "fresh") if len(o[0]) == 1], "n4", _context(history))[0] == "fresh"


def test_equal_gains_go_to_the_cheaper_move():
    history = [
        _item("n1", 0.80, 10.0),
        _item("n2", 0.84, 40.0, "slow", "n1"),
        _item("n3", 0.84, 10.0, "fast", "n1"),
        _item("n4", 0.84, 10.0),
    ]
    stats = move_stats(tuple(history), "maximize")
    assert stats["slow"].cost == pytest.approx(2.0)  # geometric mean of 4x and the 1x prior
    assert stats["fast"].cost == pytest.approx(1.0)
    assert stats["slow"].gain == stats["fast"].gain > 0
    singles = [o for o in _options("slow", "fast") if len(o[0]) == 1]
    assert _chosen(singles, "n4", _context(history))[0] == "fast"


def test_direction_and_failures_count():
    history = [
        _item("n1", 0.30, 10.0),  # rmse: lower is better
        _item("n2", 0.25, 10.0, "helps", "n1"),
        _item("n3", None, 2.0, "crashes", "n1"),
    ]
    stats = move_stats(tuple(history), "minimize")
    assert stats["helps"].gain > 0 > stats["crashes"].gain
    assert MoveStats(0, 0.0, 1.0).value() > stats["crashes"].value()


def test_an_option_expected_to_run_out_of_time_comes_last():
    history = [
        _item("n1", 0.80, 100.0),
        _item("n2", 0.90, 300.0, "huge_gain_slow", "n1"),
        _item("n3", 0.80, 100.0),
    ]
    singles = [o for o in _options("huge_gain_slow", "other") if len(o[0]) == 1]
    assert _chosen(singles, "n3", _context(history, timeout=1000.0))[0] == "huge_gain_slow"
    # ×2 expected time on a 100 s parent does not fit a 150 s limit
    assert _chosen(singles, "n3", _context(history, timeout=150.0))[0] == "other"
