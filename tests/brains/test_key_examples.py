"""The bundled examples of the key conventions (issue 37), each through its whole budget with
the recipe brain and the final stage, the real sandbox and scorer: ``crackers`` (a row id
beside purchase and brand columns, the mean of GAUC and nDCG@5) and ``catsup`` (a ranked file:
each purchase's brands best first, no score column). Each ends in a valid final submission
that beats the constant floor on the sealed test answers."""

from __future__ import annotations

import pandas as pd
import pytest

from mlguild.brains import get_brain
from mlguild.config import load_config
from mlguild.final.stage import finish
from mlguild.metrics import Score
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.sandbox import get_sandbox
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task


def test_the_examples_are_the_conventions_they_name(tmp_path):
    crackers = load_task(build_example("crackers", tmp_path / "crackers")).spec
    assert (crackers.id_column, crackers.ids_unique, crackers.group_column) == ("id", True, "purchase")
    assert crackers.metric == "mean(gauc, ndcg_at_k@5)" and crackers.submission_columns == [
        "id",
        "purchase",
        "brand",
        "score",
    ]
    catsup = build_example("catsup", tmp_path / "catsup")
    spec = load_task(catsup).spec
    assert (spec.ranked_file, spec.group_key, spec.submission_columns) == (True, "purchase", ["purchase", "brand"])
    train = pd.read_csv(catsup / "public" / "train.csv")
    test = pd.read_csv(catsup / "public" / "test.csv")
    assert not set(train["purchase"]) & set(test["purchase"])  # the test set holds whole purchases


@pytest.mark.slow
@pytest.mark.timeout(1200)  # a whole run of real models and its refits, on 2 shared cores
@pytest.mark.parametrize("name", ["crackers", "catsup"])
def test_a_key_convention_example_runs_to_a_valid_final_submission_beating_its_floor(tmp_path, name):
    cfg = load_config(
        None, ["budget.iterations=2", "search.num_drafts=2", "budget.time_s=400", "sandbox.script_timeout_s=200"]
    )
    run = create_run(load_task(build_example(name, tmp_path / name)), cfg, tmp_path / "runs")
    agent = Agent(open_session(run, get_brain("recipes"), get_sandbox(cfg.sandbox.kind)))
    done = finish(agent.session, agent.run_loop())
    graph = agent.session.state.graph
    failures = {n.id: (n.status, (n.failure or "")[-300:]) for n in graph if not n.ok}
    assert sum(n.ok for n in graph) >= 2, failures

    start = read_journal(run.path / "journal.jsonl")[0]
    direction = agent.session.scorers.holdout.metric.direction
    floor = max(
        (Score(f, direction) for f in (start["floor_score"], start["prior_floor_score"]) if f is not None),
        key=lambda s: s.key(),
    )
    agent.session.scorers.test.validate(run.path / "final" / "submission.csv")
    assert done.choice is not None and done.grade["valid"]
    assert Score(done.grade["test_score"], direction).better_than(floor), (done.grade, floor.value)
    submission = pd.read_csv(run.path / "final" / "submission.csv", dtype=str)
    assert list(submission.columns) == run.spec.submission_columns
    if run.spec.ranked_file:  # every test row once, each purchase's rows together, best first
        sample = pd.read_csv(run.workspace.data_dir / run.spec.sample_submission, dtype=str)
        assert sorted(map(tuple, submission.to_numpy())) == sorted(map(tuple, sample.to_numpy()))
    run.close()
