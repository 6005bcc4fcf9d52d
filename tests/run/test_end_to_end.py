"""The whole product on bundled examples with the offline recipe brain (marked slow: ~2 min).

What a new user sees first: real scripts, scored on a sealed holdout, beating the constant
predictor, with a best submission the scorer accepts and one final grade on the test answers.
Driven as any code that uses the library would drive it, with no CLI: an Agent, then the
library's ``finish``, which writes ``final/`` and takes the once-only grade.
"""

import pytest
from conftest import slice_task

from mlguild.brains import get_brain
from mlguild.config import load_config
from mlguild.final.grade import grade_once
from mlguild.final.stage import finish
from mlguild.metrics import Score
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.task.folder import load_task

pytestmark = pytest.mark.slow
# Each example runs on a seeded slice of its rows, the smallest that still shows a model beating
# the constant (the whole examples are the benchmarks' business). The text example's whole run is
# tests/brains/test_images_text_audio.py's (its second draft embeds every text with a sentence
# encoder, which costs more than every other node here together).
SLICES = {"churn": (1500, 400), "ames": (1000, 250)}


@pytest.mark.parametrize("name", ["churn", "ames", "titanic"])
def test_recipe_brain_beats_the_constant_predictor(example_tasks, tmp_path, name):
    cfg = load_config(None, ["budget.iterations=4", "budget.time_s=240", "sandbox.script_timeout_s=120"])
    task = example_tasks[name]
    if name in SLICES:
        task = slice_task(task, tmp_path / name, *SLICES[name])
    run = create_run(load_task(task), cfg, tmp_path / "runs")
    agent = Agent(open_session(run, get_brain("recipes")))
    stop = agent.run_loop()
    done = finish(agent.session, stop)
    graph = agent.session.state.graph
    failures = {n.id: (n.status, (n.failure or "")[-300:]) for n in graph if not n.ok}
    assert sum(n.ok for n in graph) >= 4, failures
    # honest recipe validation raises no leak alarm, and every out-of-fold file was scored
    assert not [n.id for n in graph if "leaky_cv" in n.flags], [(n.id, n.score, n.oof_score) for n in graph]
    assert all(n.oof_score is not None for n in graph if "oof" in n.outputs and n.op != "refit")

    floor = read_journal(run.path / "journal.jsonl")[0]["floor_score"]
    best = graph[agent.session.state.best_id]
    direction = agent.session.scorers.holdout.metric.direction
    assert Score(best.score, direction).better_than(Score(floor, direction)), (best.score, floor)

    agent.session.scorers.test.validate(run.best_dir / "submission.csv")  # the sample submission's ids, all of them
    final = run.path / "final"
    assert done.choice is not None and (final / "submission.csv").exists() and (final / "final.json").exists()
    grade = done.grade
    assert grade["valid"] and Score(grade["test_score"], direction).better_than(Score(floor, direction))
    assert (run.path / "audit" / "final_grade.json").exists() and grade_once(run, agent.session.state, None) == grade
    run.close()
