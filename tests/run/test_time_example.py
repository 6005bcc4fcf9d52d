"""The bundled time-ordered example (modeldata's Chicago ridership, its test days after its
train days) runs with the offline recipe brain through its whole budget and the final stage:
the holdout is the latest labelled days, every script validates in time order, and the final
submission is valid and beats the constant floor on the sealed test answers (marked slow)."""

import pandas as pd
import pytest
from conftest import slice_task

from mlguild.brains import get_brain
from mlguild.config import load_config
from mlguild.final.stage import finish
from mlguild.metrics import Score
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task

pytestmark = pytest.mark.slow


def test_the_ridership_example_runs_to_a_final_submission_that_beats_its_floor(tmp_path):
    # a seeded third of its days, still in time order: the same data, smaller
    task = load_task(slice_task(build_example("ridership", tmp_path / "example"), tmp_path / "ridership", 1500, 400))
    cfg = load_config(None, ["budget.iterations=4", "budget.time_s=240", "sandbox.script_timeout_s=120"])
    run = create_run(task, cfg, tmp_path / "runs")
    agent = Agent(open_session(run, get_brain("recipes")))
    stop = agent.run_loop()
    assert stop.finished
    done = finish(agent.session, stop)
    graph = agent.session.state.graph
    failures = {n.id: (n.status, (n.failure or "")[-300:]) for n in graph if not n.ok}
    assert sum(n.ok for n in graph) >= 4, failures

    data = run.path / "workspace" / "data"
    fit, holdout = pd.read_csv(data / "train.csv"), pd.read_csv(data / "holdout.csv")
    assert fit["date"].max() < holdout["date"].min()
    for node in graph:
        if node.op == "draft":
            assert "time_folds(train[TIME_COLUMN], N_FOLDS)" in (run.node_dir(node.id) / "solution.py").read_text()

    # Honest expanding-window scores on the past beat the future holdout: no leaky_cv alarm.
    assert not [n.id for n in graph if "leaky_cv" in n.flags]
    floor = read_journal(run.path / "journal.jsonl")[0]["floor_score"]
    direction = agent.session.scorers.holdout.metric.direction
    best = graph[agent.session.state.best_id]
    assert Score(best.score, direction).better_than(Score(floor, direction)), (best.score, floor)
    agent.session.scorers.test.validate(run.path / "final" / "submission.csv")
    grade = done.grade
    assert done.choice is not None and grade["valid"]
    assert Score(grade["test_score"], direction).better_than(Score(floor, direction)), (grade, floor)
    run.close()
