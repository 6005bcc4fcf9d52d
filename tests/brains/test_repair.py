"""Repairs that read the failure: a failing step's column is left out in one debug node, and a
run whose every node fails the same way stops only after the safest pipeline failed too,
naming the real cause. Real runs: the recipe brain, the local sandbox, the real scorer.

The failures are planted in the recipe brain's own scripts by a thin wrapper, as a bug in a
template would put them there; everything else (diagnosis, repair, rendering, the loop's
stop rule) is the product's code.
"""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import make_task

from mlguild.brains.recipes import RecipeBrain
from mlguild.coder.diagnose import diagnose
from mlguild.config import load_config
from mlguild.core.errors import BrainBroken
from mlguild.core.protocols import LAST_RESORT, Action, Context, Proposal
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task

# The date step as it was before the column parsers: a UTC "Z" timestamp parsed without
# utc=True is zone-aware, and subtracting a naive date from it raises a TypeError.
PARSED = "add_date_parts(c, parse_datetime(inputs[c]))"
OLD_BUG = "add_date_parts(c, pd.to_datetime(inputs[c]))"


class PlantingBrain:
    """The recipe brain, with ``old`` replaced by ``new`` in the scripts of the ops given."""

    name = "recipes"
    has_last_resort = True

    def __init__(self, old: str, new: str, ops: tuple[str, ...]):
        self.inner, self.old, self.new, self.ops = RecipeBrain(), old, new, ops

    def propose(self, action: Action, context: Context) -> Proposal:
        proposal = self.inner.propose(action, context)
        if action.op not in self.ops:
            return proposal
        assert self.old in proposal.code, "the plant must change the script"
        return Proposal(proposal.plan, proposal.code.replace(self.old, self.new), proposal.meta)


def _task_with_timestamps(root):
    task = make_task(root, n=240)
    for name in ("train.csv", "test.csv"):
        path = task / "public" / name
        frame = pd.read_csv(path, dtype=str)
        when = pd.Timestamp("2013-11-01", tz="UTC") + pd.to_timedelta(range(len(frame)), unit="h")
        frame["created"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")  # as every API export writes them
        frame.to_csv(path, index=False)
    return task


def _agent(task, tmp_path, brain, **overrides):
    sets = [
        f"{k}={v}"
        for k, v in {
            "search.num_drafts": 1,
            "search.debug_probability": 1.0,
            "search.draft_every": 0,
            "search.fuse_every": 0,
            "final.refit": False,
            "final.reference_models": False,  # the brain's own scripts only: they are what fails
            "sandbox.script_timeout_s": 120,
            **overrides,
        }.items()
    ]
    cfg = load_config(None, sets)
    run = create_run(load_task(task), cfg, tmp_path / "runs")
    return Agent(open_session(run, brain, get_sandbox("local"))), run


@pytest.mark.slow
def test_a_failing_feature_step_is_repaired_by_one_debug_node(tmp_path):
    brain = PlantingBrain(PARSED, OLD_BUG, ops=("draft",))
    agent, run = _agent(_task_with_timestamps(tmp_path / "task"), tmp_path, brain, **{"budget.iterations": 2})
    assert str(agent.run_loop()) == "budget: iterations"
    draft, fix = list(agent.session.state.graph)
    assert draft.status == "crash"
    cause = diagnose(draft.failure)
    assert (cause.exception, cause.step, cause.column) == ("TypeError", "columns", "created")
    assert "tz-naive and tz-aware" in cause.message
    # One debug node later: the column the step failed on is left out, and the node scores.
    assert fix.op == "debug" and fix.parents == (draft.id,)
    assert fix.meta["move"] == "drop_column" and fix.meta["features"]["drop_columns"] == ["created"]
    assert fix.status == "scored" and fix.score is not None
    assert "TypeError in step 'columns' on column 'created'" in fix.plan
    run.close()


@pytest.mark.slow
def test_identical_failures_stop_the_run_only_after_the_safest_pipeline_and_name_the_cause(tmp_path):
    # Every script, the safest pipeline's included, fails as a broken library would make it fail.
    broken = 'step("model")\n    raise RuntimeError("the BLAS library is broken")'
    brain = PlantingBrain('step("model")', broken, ops=("draft", "improve", "debug"))
    # The rule is the same at any count: four identical failures stand for the default 25.
    limits = {"budget.iterations": 60, "search.max_same_failures": 4}
    agent, run = _agent(make_task(tmp_path / "task", n=120), tmp_path, brain, **limits)
    with pytest.raises(BrainBroken) as stopped:
        agent.run_loop()
    nodes = list(agent.session.state.graph)
    assert not any(n.ok for n in nodes)
    assert any(n.meta.get(LAST_RESORT) for n in nodes)  # the safest pipeline was tried first
    message = str(stopped.value)
    assert "the safest pipeline included" in message
    assert "RuntimeError in step 'model': the BLAS library is broken" in message
    assert "environment, not the ideas" not in message
    run.close()
