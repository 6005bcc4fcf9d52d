"""results.tsv: one line per finished node, appended as nodes finish, rebuilt from the journal."""

from __future__ import annotations

import csv

from conftest import CRASH, GOOD, scripted_agent

from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op
from mlguild.run.session import Session
from mlguild.rundir.results import COLUMNS, RESULTS


def _rows(run_path):
    with (run_path / RESULTS).open() as f:
        return list(csv.reader(f, delimiter="\t"))


def test_each_finished_node_is_a_line_and_a_resume_rebuilds_the_file(small_task, tmp_path):
    agent, run = scripted_agent(small_task, tmp_path, [GOOD, CRASH, GOOD.replace("-3", "-2")])
    for i in range(3):
        agent.step(Action(Op.DRAFT, (), f"draft {i}"), timeout=30)
    rows = _rows(run.path)
    assert tuple(rows[0]) == COLUMNS and [r[0] for r in rows[1:]] == ["n0001", "n0002", "n0003"]
    graph = agent.session.state.graph
    first, crashed = dict(zip(COLUMNS, rows[1])), dict(zip(COLUMNS, rows[2]))
    assert first["status"] == "scored" and float(first["holdout_score"]) == float(f"{graph['n0001'].score:.6g}")
    assert crashed["status"] == graph["n0002"].status and crashed["holdout_score"] == ""
    assert first["op"] == "draft" and float(first["seconds"]) >= 0

    (run.path / RESULTS).write_text("damaged\n")  # a hand edit, or a kill between journal and table
    agent.session.close()
    session = Session(run, agent.session.brain, agent.session.policy, agent.session.executor.sandbox)
    try:
        assert _rows(run.path) == rows
    finally:
        session.close()
