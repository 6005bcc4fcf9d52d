"""Stages III and IV of the community cycle as CoMind runs them: a write-run-observe-refine loop
inside the node, judged by the script's own validation and never by the holdout (scored once,
for the node's final script), and a report the model writes from the harness's numbers, whose
next directions become ideas (mlguild.run.fix_loop, mlguild.run.cycle_report)."""

from __future__ import annotations

import json

from conftest import CRASH, GOOD
from test_cycle import _cycle_agent, _draft, _script

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.brains.llm.report import parse_report
from mlguild.llm.scripted import ScriptedLLM
from mlguild.pools.ideas import REPORT
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import open_run
from mlguild.rundir.replay import replay
from mlguild.util.fs import sha256_text

# A script that works but models the noise column x1; it says so in its own validation.
WEAK = GOOD.replace('frame["x0"]', 'frame["x1"]').replace("cv_score: 0.99999", "cv_score: 0.52")
DONE = "DONE: the curve on x0 is all the draft asks for."
DIRECTIONS = [
    "add gradient-boosted trees on x0, x1 and x2 with early stopping",
    "calibrate the probabilities with isotonic regression on the folds",
]
REPORT_REPLY = (
    "```json\n"
    + json.dumps(
        {
            "method": "A logistic curve on x0, refined from a first curve on the noise column x1.",
            "components": ["the curve on x0: it carries the whole holdout score"],
            "results": "the harness's holdout score is the run's first",
            "limitations": ["one feature only"],
            "next": DIRECTIONS,
        }
    )
    + "\n```\n"
)


def _count_holdout_scores(agent) -> list:
    """Every call of the run's sealed holdout scorer, kept in a list (the scorer still scores)."""
    holdout, calls = agent.session.scorers.holdout, []
    real = holdout.score
    holdout.score = lambda path: calls.append(path) or real(path)
    return calls


def _steps(run, node) -> list[dict]:
    folder = run.node_dir(node.id) / "steps"
    return [json.loads((folder / s / "outcome.json").read_text()) for s in sorted(p.name for p in folder.iterdir())]


def test_the_loop_refines_a_working_script_on_its_own_validation_and_scores_the_holdout_once(tmp_path):
    agent, run, llm = _cycle_agent(tmp_path, [], **{"budget.iterations": 1})
    idea = agent.session.pools.ideas.all()[0]
    scored = _count_holdout_scores(agent)
    llm.replies.extend([_draft(idea.id), _script(WEAK), _script(GOOD), DONE, REPORT_REPLY])
    agent.run_loop()
    (node,) = agent.session.state.graph
    purposes = [c["purpose"] for c in llm.calls]
    assert purposes == ["cycle:draft", "cycle:implement", "cycle:refine", "cycle:refine", "report"]
    # The refinement read the working script's own output (untrusted), not a holdout score.
    first = llm.calls[2]["messages"][-1].content
    assert "printed validation score 0.52" in first and "cv_score: 0.52" in first and "Step 1" in first
    second = llm.calls[3]["messages"][-1].content
    assert "step 1: ran" in second and "printed validation score 0.99999" in second
    # Both steps were checked, neither scored; the holdout was scored once, for the final script.
    assert [(o["status"], o["score"]) for o in _steps(run, node)] == [("checked", None), ("checked", None)]
    assert len(scored) == 1
    assert node.ok and node.meta["steps"] == 2 and node.score > 0.85  # x0's curve, not x1's noise
    script = (run.node_dir(node.id) / "solution.py").read_text()
    assert script.strip() == GOOD.strip() and node.code_sha256 == sha256_text(script)
    assert [r["step"] for r in run.journal.records if r["type"] == "node_step"] == [2]
    # Stage IV: the model wrote the report from the harness's numbers...
    report_prompt = llm.calls[4]["messages"][-1].content
    assert f"holdout {node.score:.6g}" in report_prompt and "a logistic curve on x0" in report_prompt.lower()
    written = agent.session.pools.reports.get(node.id)
    assert written.author == llm.model and written.directions == tuple(DIRECTIONS)
    assert written.result.startswith(f"holdout {node.score:.6g}")  # the numbers stay the harness's
    report_md = (run.node_dir(node.id) / "report.md").read_text()
    assert "## Next directions" in report_md and DIRECTIONS[0] in report_md
    # ...and its next directions are ideas of origin "report", from this node.
    from_report = {i.text: i for i in agent.session.pools.ideas.all() if i.origin == REPORT}
    assert set(DIRECTIONS) <= set(from_report)
    assert from_report[DIRECTIONS[0]].sources[0].item == node.id
    (record,) = [r for r in run.journal.records if r["type"] == "node_report"]
    assert record["author"] == llm.model and record["directions"] == DIRECTIONS


def test_a_refinement_that_crashes_falls_back_to_the_working_script(tmp_path):
    agent, run, llm = _cycle_agent(tmp_path, [], **{"budget.iterations": 1, "brain.cycle_steps": 2})
    idea = agent.session.pools.ideas.all()[0]
    scored = _count_holdout_scores(agent)
    garbled = "Here is my report: it went well, try more trees."
    llm.replies.extend([_draft(idea.id), _script(GOOD), _script(CRASH), garbled])
    agent.run_loop()
    (node,) = agent.session.state.graph
    assert [o["status"] for o in _steps(run, node)] == ["checked", "crash"]
    # The node is the working step's: its script, its outputs, its one holdout score.
    assert node.ok and node.meta["final_step"] == 1 and len(scored) == 1
    node_dir = run.node_dir(node.id)
    script = (node_dir / "solution.py").read_text()
    assert script.strip() == GOOD.strip() and (node_dir / "output" / "holdout.csv").is_file()
    assert "cv_score: 0.99999" in (node_dir / "stdout.txt").read_text()
    restored = [r for r in run.journal.records if r["type"] == "node_step" and r.get("restored")]
    assert [r["step"] for r in restored] == [1] and restored[0]["code_sha256"] == sha256_text(script)
    assert replay(run.journal.records, "maximize").graph[node.id].code_sha256 == sha256_text(script)
    # A reply that is not a report leaves the harness's: the node keeps one, no idea is made up.
    (record,) = [r for r in run.journal.records if r["type"] == "node_report"]
    assert record["author"] == "harness" and "not a report" in record["failure"]
    assert agent.session.pools.reports.get(node.id).author == "harness"
    assert not [i for i in agent.session.pools.ideas.all() if i.origin == REPORT]


def test_a_report_reply_is_read_fenced_or_bare_and_refused_when_garbled():
    written = parse_report(REPORT_REPLY, "m")
    assert written is not None and written.directions == tuple(DIRECTIONS) and written.model == "m"
    assert parse_report(json.dumps({"method": "trees", "next": "one direction"})).directions == ("one direction",)
    for bad in ("no json here", "{not json}", '["a", "list"]', json.dumps({"results": "only results"})):
        assert parse_report(bad) is None, bad
    many = parse_report(json.dumps({"method": "x", "next": [f"direction {i}" for i in range(9)]}))
    assert many is not None and len(many.directions) == 3  # bounded: they enter every prompt


class Killed(BaseException):
    """The run's process dying (SIGKILL): nothing in the harness catches it."""


class KilledAtRun:
    """The run's real sandbox, except that the run is killed when its ``at``-th script is
    handed over, before it runs: what a kill during that script leaves on disk."""

    def __init__(self, inner, at: int) -> None:
        self.inner, self.at, self.calls = inner, at, 0
        self.layer, self.strong = inner.layer, inner.strong

    def run(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.at:
            raise Killed
        return self.inner.run(*args, **kwargs)


def _run_killed(agent, run, at: int) -> None:
    """Run ``agent`` until its run is killed as its ``at``-th script is handed over, leaving the
    journal as a SIGKILL does (no ``session_ended``), and close the run."""
    executor = agent.session.executor
    executor.sandbox = KilledAtRun(executor.sandbox, at)
    try:
        agent.run_loop()
    except Killed:
        pass
    run.close()
    lines = run.journal.path.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["type"] == "session_ended"
    run.journal.path.write_text("".join(lines[:-1]))


def _resumed(path):
    """The run at ``path`` opened again, with an Agent whose model has no reply to give."""
    run = open_run(path)
    brain = LLMBrain(ScriptedLLM([], default=None), LLMBrainOptions(diff_mode=False, cycle=True))
    return Agent(open_session(run, brain)), run


def _killed_while_refining(tmp_path, refinement: str, kills: int = 1):
    """A cycle node whose first script works and whose refinement (``refinement``) is being
    run when the run is killed (``kills`` times: each resume killed as it runs it again); then
    the run resumed. (the resumed run, its node, how many times that run scored the holdout)."""
    agent, run, llm = _cycle_agent(tmp_path, [], **{"budget.iterations": 1})
    idea = agent.session.pools.ideas.all()[0]
    llm.replies.extend([_draft(idea.id), _script(GOOD), _script(refinement)])
    _run_killed(agent, run, at=2)
    (node_id,) = [r["node"]["id"] for r in run.journal.records if r["type"] == "node_started"]
    assert [r["step"] for r in run.journal.records if r["type"] == "node_step"] == [2]
    assert (run.node_dir(node_id) / "steps" / "01" / "output" / "holdout.csv").is_file()  # the working step's
    for _ in range(kills - 1):
        _run_killed(*_resumed(run.path), at=1)
    again, resumed = _resumed(run.path)
    scored = _count_holdout_scores(again)
    again.run_loop()
    return resumed, again.session.state.graph[node_id], scored


def test_a_refinement_the_kill_interrupted_that_fails_on_resume_falls_back_to_the_working_step(tmp_path):
    run, node, scored = _killed_while_refining(tmp_path, CRASH)
    # Run again, the refinement crashes: the node is its working first step's, scored once.
    assert node.ok and node.meta["final_step"] == 1 and len(scored) == 1 and node.score > 0.85
    node_dir = run.node_dir(node.id)
    script = (node_dir / "solution.py").read_text()
    assert script.strip() == GOOD.strip() and "cv_score: 0.99999" in (node_dir / "stdout.txt").read_text()
    assert (node_dir / "output" / "holdout.csv").is_file() and not (node_dir / "steps" / "01" / "output").exists()
    assert [o["status"] for o in _steps(run, node)] == ["checked", "crash"]
    records = run.journal.records
    restarts = [r for r in records if r["type"] == "node_started" and r["node"].get("restart")]
    assert len(restarts) == 1
    (restored,) = [r for r in records if r["type"] == "node_step" and r.get("restored")]
    assert restored["step"] == 1 and restored["code_sha256"] == sha256_text(script)
    (finished,) = [r for r in records if r["type"] == "node_finished" and r["id"] == node.id]
    assert finished["status"] == "scored" and finished["score"] == node.score
    assert replay(records, "maximize").graph[node.id].code_sha256 == sha256_text(script)


def test_a_refinement_the_kill_interrupted_that_works_on_resume_is_the_node_scored_once(tmp_path):
    run, node, scored = _killed_while_refining(tmp_path, WEAK)
    # Run again, the refinement works: it is the node's, checked, then scored once.
    assert node.ok and "final_step" not in node.meta and len(scored) == 1
    assert node.score < 0.85 and node.printed_score == 0.52  # the refinement's, not the first step's
    node_dir = run.node_dir(node.id)
    assert (node_dir / "solution.py").read_text().strip() == WEAK.strip()
    assert not (node_dir / "steps" / "01" / "output").exists()  # the working step's outputs are spent
    assert [o["status"] for o in _steps(run, node)] == ["checked", "checked"]
    assert not [r for r in run.journal.records if r["type"] == "node_step" and r.get("restored")]


def test_a_refinement_killed_twice_falls_back_to_the_working_step_without_a_third_run(tmp_path):
    run, node, scored = _killed_while_refining(tmp_path, GOOD.replace("-3 *", "-2 *"), kills=2)
    # Killed again as it ran again: it is not run a third time; the working step stands.
    assert node.ok and node.meta["final_step"] == 1 and len(scored) == 1
    assert (run.node_dir(node.id) / "solution.py").read_text().strip() == GOOD.strip()
    statuses = [o["status"] for o in _steps(run, node)]
    assert statuses == ["checked", "interrupted"]
    assert len([r for r in run.journal.records if r["type"] == "node_finished"]) == 1
