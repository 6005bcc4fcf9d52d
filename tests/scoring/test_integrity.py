"""Result integrity: the scorer's fingerprint, the once-only final grade, leak flags."""

import json

import pandas as pd
import pytest
from conftest import GOOD, make_task
from conftest import scripted_agent as _agent

from mlguild.core.errors import ScorerIntegrityError
from mlguild.final.grade import audit_path, grade_once
from mlguild.rundir.journal import read_journal
from mlguild.rundir.replay import replay

PERFECT = GOOD.replace('1 / (1 + (-3 * frame["x0"]).map(__import__("math").exp))', '(frame["x0"] > 0).astype(int)')


def test_a_changed_scorer_stops_the_run(small_task, tmp_path):
    agent, run = _agent(small_task, tmp_path, [GOOD], **{"budget.iterations": 3})
    assert agent.session.executor.scorer_fingerprint == replay(run.journal.records, "maximize").scorer_fingerprint
    agent.session.executor.scorer_fingerprint = "0" * 64  # as if scorer.py changed since the run started
    with pytest.raises(ScorerIntegrityError, match="scorer"):
        agent.run_loop()
    records = read_journal(run.path / "journal.jsonl")
    assert records[-1]["type"] == "session_ended" and records[-1]["reason"] == "error"
    assert not any(r["type"] == "node_finished" and r.get("score") is not None for r in records)


def test_final_grade_is_written_once_and_never_overwritten(small_task, tmp_path):
    agent, run = _agent(small_task, tmp_path, [GOOD], **{"budget.iterations": 2})
    agent.run_loop()
    first = grade_once(run, agent.session.state, agent.session.scorers.grade)
    audit = json.loads(audit_path(run).read_text())
    assert audit["test_score"] == first["test_score"] and audit["node"] == first["node"]
    assert set(audit) >= {"node", "code_sha256", "submission_sha256", "test_score", "graded_at"}
    # Killed after the audit was written but before the journal said so: the audit is reused, not redone.
    records = [r for r in read_journal(run.path / "journal.jsonl") if r["type"] != "final_graded"]
    state = replay(records, "maximize")
    (run.best_dir / "submission.csv").write_text("id,y\n")  # would be invalid if graded again
    again = grade_once(run, state, agent.session.scorers.grade)
    assert again["test_score"] == first["test_score"] and again["valid"]
    from mlguild.final.grade import _write_once

    with pytest.raises(FileExistsError):
        _write_once(audit_path(run), {"node": "forged"})


@pytest.mark.parametrize("rows, flagged", [(1400, True), (200, False)])  # holdouts of 210 and 30 rows
def test_perfect_and_constant_results_are_flagged(tmp_path, rows, flagged):
    """A perfect score is flagged on a holdout of at least MIN_PERFECT_ROWS rows, where it is
    surprising; on a small one an easy task often scores perfectly (issue 25)."""
    root = make_task(tmp_path / "t", n=rows)
    for name in ("train.csv",):
        frame = pd.read_csv(root / "public" / name)
        frame["y"] = (frame["x0"] > 0).astype(int)  # a task a threshold solves exactly
        frame.to_csv(root / "public" / name, index=False)
    agent, run = _agent(root, tmp_path, [PERFECT], **{"budget.iterations": 3})
    agent.run_loop()
    perfect, prior = agent.session.state.graph["n0001"], agent.session.state.graph["n0002"]
    assert perfect.score == 1.0 and ("perfect_score" in perfect.flags) == flagged
    assert "constant_predictions" in prior.flags and "perfect_score" not in prior.flags
    report = (run.node_dir("n0001") / "report.md").read_text()
    assert ("label leak" in report) == flagged
    finished = {r["id"]: r for r in read_journal(run.path / "journal.jsonl") if r["type"] == "node_finished"}
    assert finished["n0001"]["flags"] == (["perfect_score"] if flagged else [])
