"""One path for every node: each kind of node (and each step of a node's fix loop) is in
the journal, with the hash of the script about to run, before that script runs.

The sandbox here is the real local layer, wrapped so that at the moment a script is handed
to it, it reads the run's journal from disk (as a resume would after a kill right then) and
notes the record that announced the script."""

from __future__ import annotations

from pathlib import Path

from conftest import CRASH, GOOD, make_task

from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config
from mlguild.core.protocols import Action, Context, FixRequest, Proposal
from mlguild.core.vocabulary import Op, Status
from mlguild.final.stage import finish
from mlguild.run.budget import Stop
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task
from mlguild.util.fs import sha256_text


class JournalFirst:
    """The local sandbox, noting for every script the journal record last written about its
    node when the script was handed over."""

    def __init__(self) -> None:
        self.inner = get_sandbox("local")
        self.layer, self.strong = self.inner.layer, self.inner.strong
        self.seen: list[dict] = []

    def run(self, argv, cwd, env, limits, stdout_path, stderr_path, data_dir=None):
        node = Path(cwd).name
        records = read_journal(Path(cwd).parent.parent / "journal.jsonl")
        about = [r for r in records if r.get("id") == node or r.get("node", {}).get("id") == node]
        last = about[-1]
        announced = last.get("code_sha256") or last.get("node", {}).get("code_sha256")
        started = next(r["node"] for r in about if r["type"] == "node_started")
        script = (Path(cwd) / "solution.py").read_text()
        self.seen.append({"node": node, "op": started["op"], "record": last["type"], "announced": announced,
                          "script": sha256_text(script)})  # fmt: skip
        return self.inner.run(argv, cwd, env, limits, stdout_path, stderr_path, data_dir)


class EveryKindBrain(ScriptedBrain):
    """A scripted brain that also explores and fixes (the optional capabilities)."""

    def explore(self, context: Context) -> Proposal:
        return Proposal("look at the data", "print('rows: 150')\n", {"summary": "exploration"})

    def fix_step(self, request: FixRequest) -> tuple[str, str]:
        return "the script crashed: write the working one", GOOD


def test_every_node_kind_is_journaled_before_its_script_runs(tmp_path):
    cycle = {"cycle": "community"}
    replies = [
        Proposal("draft", GOOD, {"recipe": "a"}),
        Proposal("crashing draft", CRASH, {"recipe": "b"}),
        Proposal("debug", GOOD, {"recipe": "b"}),
        Proposal("improve", GOOD.replace("-3 *", "-2 *"), {"recipe": "a"}),
        Proposal("evolve, first crashing", CRASH, {"recipe": "a", **cycle}),
        Proposal("fuse", GOOD.replace("-3 *", "-4 *"), {"recipe": "a"}),
        Proposal("blend", GOOD, {"recipe": "blend"}),
    ]
    cfg = load_config(None, ["budget.iterations=40", "sandbox.script_timeout_s=30", "brain.cycle_steps=3"])
    run = create_run(load_task(make_task(tmp_path / "task")), cfg, tmp_path / "runs")
    sandbox = JournalFirst()
    agent = Agent(open_session(run, EveryKindBrain(replies), sandbox))
    step = agent.step
    step(Action(Op.EDA), 20)
    draft = step(Action(Op.DRAFT), 20)
    crashed = step(Action(Op.DRAFT), 20)
    assert crashed.status == "crash"
    step(Action(Op.DEBUG, (crashed.id,)), 20)
    improved = step(Action(Op.IMPROVE, (draft.id,)), 20)
    evolved = step(Action(Op.EVOLVE, (draft.id,)), 20)
    assert evolved.status == Status.SCORED and evolved.meta["steps"] == 2  # fixed in its second step
    fused = step(Action(Op.FUSE, (draft.id, improved.id)), 20)
    step(Action(Op.BLEND, (draft.id, fused.id)), 20)
    step(Action(Op.RERUN, (draft.id,)), 20)
    step(Action(Op.GROW, (draft.id,)), 20)  # its script on more rows (here every row: a small table)
    done = finish(agent.session, Stop("budget", "iterations"))
    run.close()
    assert done.choice is not None and done.choice["refit"], done.choice

    kinds = {(s["op"], s["record"]) for s in sandbox.seen}
    every_op = {
        (op, "node_started") for op in Op
    }  # eda, draft, improve, debug, evolve, fuse, blend, rerun, grow, refit
    assert every_op <= kinds, sorted(every_op - kinds)
    assert (Op.EVOLVE, "node_step") in kinds  # the fix loop's second script
    for seen in sandbox.seen:
        assert seen["record"] in ("node_started", "node_step"), seen
        assert seen["announced"] == seen["script"], seen  # the journal names the very script that runs
