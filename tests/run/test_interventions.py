"""Every human touch is journaled with its time and what it changed; the harness's own writes
are not touches."""

from __future__ import annotations

from conftest import make_task

from mlguild.config import load_config
from mlguild.core.protocols import Action, Context, Proposal
from mlguild.launch import resume, start
from mlguild.metrics import get_metric
from mlguild.rundir.folder import RunDir
from mlguild.rundir.interventions import autonomy
from mlguild.rundir.journal import read_journal
from mlguild.rundir.replay import replay


def _touches(run_path):
    return [(r["kind"], r.get("file")) for r in read_journal(run_path / "journal.jsonl") if r["type"] == "intervention"]


def test_edits_between_sessions_settings_and_resumes_are_interventions_with_their_times(tmp_path):
    task = make_task(tmp_path / "task")
    run = start(task, load_config(None, ["brain.name=scripted"]), runs_dir=tmp_path / "runs", launch=False)
    assert isinstance(run, RunDir)
    brief = run.path / "brief.md"
    brief.write_text(brief.read_text() + "\nPrefer simple models.\n")  # the --no-launch workflow's edit
    resume(run.path, ["budget.iterations=2", "brain.name=scripted"])
    assert _touches(run.path) == [("resume", None), ("settings", None), ("edited", "brief.md")]

    # between two sessions: a node's script edited, the config edited, knowledge added to the task
    script = run.path / "nodes" / "n0001" / "solution.py"
    script.write_text(script.read_text() + "\n# tuned by hand\n")
    config = run.path / "config.yaml"
    config.write_text(config.read_text().replace("seed: 0", "seed: 0  # mine", 1))
    (task / "knowledge").mkdir()
    (task / "knowledge" / "tip.md").write_text("---\ntitle: a tip\n---\nUse x0.\n")
    resume(run.path, ["budget.iterations=3"])
    records = read_journal(run.path / "journal.jsonl")
    later = _touches(run.path)[3:]
    assert later == [
        ("resume", None),
        ("settings", None),
        ("edited", "config.yaml"),
        ("edited", "knowledge"),
        ("edited", "nodes/n0001/solution.py"),
    ]
    touches = [r for r in records if r["type"] == "intervention"]
    assert all(r["ts"] and r["what"] for r in touches)
    assert "settings changed on resume: budget.iterations=3" in touches[4]["what"]

    state = replay(records, get_metric("roc_auc").direction)
    summary = autonomy(records, state.graph, state.spent_s)
    assert summary["interventions"] == 8 and summary["nodes_since_last"] == 1  # n0003 ran after the last touch
    assert summary["per_hour"] is not None and summary["per_hour"] > 0


def test_the_harness_own_writes_and_a_plain_resume_are_not_edits(tmp_path):
    done = start(make_task(tmp_path / "task"), load_config(None, ["budget.iterations=2", "brain.name=scripted"]),
                 runs_dir=tmp_path / "runs", dry_run=True)  # fmt: skip
    resume(done.run.path, ["budget.iterations=3"])
    assert _touches(done.run.path) == [("resume", None), ("settings", None)]


def test_a_ctrl_c_is_an_intervention(tmp_path):
    from mlguild.brains.scripted import ScriptedBrain
    from mlguild.run.loop import INTERRUPTED, Agent
    from mlguild.run.session import open_session
    from mlguild.rundir.folder import create_run
    from mlguild.sandbox import get_sandbox
    from mlguild.task.folder import load_task

    def stop(action: Action, context: Context) -> Proposal:
        raise KeyboardInterrupt

    cfg = load_config(None, ["budget.iterations=3"])
    run = create_run(load_task(make_task(tmp_path / "task")), cfg, tmp_path / "runs")
    agent = Agent(open_session(run, ScriptedBrain([stop]), get_sandbox("local")))
    assert agent.run_loop() == INTERRUPTED
    agent.session.close()
    assert _touches(run.path) == [("interrupt", None)]
