"""The task brief (brief.md): written before the first node, by the LLM when there is one and
by heuristics from the data otherwise; carried by every LLM prompt; an edit survives resume;
`--no-launch` stops after writing it."""

from __future__ import annotations

from conftest import FULL, llm_agent, mlguild, one_line

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.llm import ScriptedLLM
from mlguild.llm.errors import TransientError
from mlguild.task.brief import brief_path, ensure_brief, heuristic_brief

LLM_BRIEF = """# Brief
## Rules
Predict y for every test row.
## Metric
ROC AUC rewards ranking, not calibration.
## Data notes
x0 carries nearly all the signal; x1 and x2 look like noise.
## Promising directions
1. A logistic curve on x0 alone.
2. Gradient-boosted trees on x0, x1, x2 with early stopping.
3. A blend of the two.
"""


def test_heuristic_directions_follow_the_data(example_tasks, tmp_path):
    briefs = {}
    for name in ("reviews", "ames", "churn"):
        args = ["--no-launch", "--runs-dir", str(tmp_path / "runs"), "--run-id", name]
        done = mlguild("run", str(example_tasks[name]), *args, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        briefs[name] = brief_path(tmp_path / "runs" / name).read_text()
    assert "TF-IDF" in briefs["reviews"] and "TF-IDF" not in briefs["ames"]
    assert "log1p(target)" in briefs["ames"] and "rmsle" in briefs["ames"]
    assert "probability of the positive class ('Yes')" in briefs["churn"]
    for text in briefs.values():
        assert "## Promising directions\n1. " in text and "holdout" in text


def test_the_llm_writes_the_brief_and_every_prompt_carries_it(tmp_path):
    llm = ScriptedLLM([LLM_BRIEF], default=FULL)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 3})
    text, author = ensure_brief(run.path, run.spec, run.profile, run.description, llm)
    assert (author, text.strip()) == ("llm", LLM_BRIEF.strip())
    asked = llm.calls[0]
    assert asked["purpose"] == "brief" and "Synthetic test task" in asked["messages"][-1].content
    agent.run_loop()
    proposals = [c for c in llm.calls if c["purpose"] != "brief"]
    assert proposals and all("x0 carries nearly all the signal" in c["messages"][0].content for c in proposals)


def test_a_failing_llm_leaves_the_heuristic_brief_and_an_edit_is_kept(tmp_path):
    llm = ScriptedLLM([TransientError("scripted/fake", "server busy")], default=FULL)
    _, run = llm_agent(tmp_path, LLMBrain(llm), **{"budget.iterations": 1})
    text, author = ensure_brief(run.path, run.spec, run.profile, run.description, llm)
    assert author == "heuristics" and "could not write this brief: TransientError" in text
    assert text.startswith(heuristic_brief(run.spec, run.profile).rstrip("\n"))
    brief_path(run.path).write_text("# My own brief\n1. Only try a logistic curve.\n")
    again, author = ensure_brief(run.path, run.spec, run.profile, run.description, ScriptedLLM([LLM_BRIEF]))
    assert author == "existing" and again.startswith("# My own brief")


def test_no_launch_writes_the_brief_and_resume_reads_the_edit(small_task, tmp_path):
    created = mlguild("run", str(small_task), "--no-launch", "--run-id", "r", "-n", "2", cwd=tmp_path)
    assert created.returncode == 0, created.stdout + created.stderr
    run = tmp_path / "runs" / "r"
    assert "not launched" in one_line(created.stdout) and brief_path(run).exists()
    assert not (run / "nodes").exists() or not any((run / "nodes").iterdir())
    brief_path(run).write_text("# Edited by the user\n")
    resumed = mlguild("resume", str(run), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "kept as found" in resumed.stdout and brief_path(run).read_text() == "# Edited by the user\n"
    assert any((run / "nodes").iterdir())
