"""The whole product on bundled examples with the offline recipe brain (marked slow: ~2 min).

What a new user sees first: real scripts, scored on a sealed holdout, beating the constant
predictor, with a best submission the scorer accepts and one final grade on the test answers.
"""

import pytest

from mlguild.agent import Agent
from mlguild.brains import get_brain
from mlguild.config import load_config
from mlguild.final import grade_final
from mlguild.firewall import read_csv_exact
from mlguild.journal import read_journal
from mlguild.metrics import Score
from mlguild.rundir import create_run
from mlguild.sandbox import get_sandbox
from mlguild.scorer import read_submission
from mlguild.search import get_policy
from mlguild.task import load_task

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["churn", "ames", "reviews"])
def test_recipe_brain_beats_the_constant_predictor(example_tasks, tmp_path, name):
    cfg = load_config(None, ["budget.iterations=6", "budget.time_s=240", "sandbox.script_timeout_s=120"])
    run = create_run(load_task(example_tasks[name]), cfg, tmp_path / "runs")
    agent = Agent(run, get_brain("recipes"), get_policy(cfg.search), get_sandbox(cfg.sandbox.kind))
    agent.run_loop()
    graph = agent.state.graph
    failures = {n.id: (n.status, (n.failure or "")[-300:]) for n in graph if not n.ok}
    assert sum(n.ok for n in graph) >= 5, failures

    floor = read_journal(run.path / "journal.jsonl")[0]["floor_score"]
    best = graph[agent.state.best_id]
    direction = agent.runner.metric.direction
    assert Score(best.score, direction).better_than(Score(floor, direction)), (best.score, floor)

    ids = read_csv_exact(run.workspace.data_dir / run.spec.sample_submission)[run.spec.id_column].tolist()
    read_submission(run.best_dir / "submission.csv", agent.runner.fmt, ids, metric=agent.runner.metric)
    grade = grade_final(run, agent.state, agent.runner)
    assert grade["valid"] and Score(grade["test_score"], direction).better_than(Score(floor, direction))
    run.close()
