"""What the model is told, as reviewed text: each op's prompt from a recorded run with the
scripted LLM (tests/prompts/prompt_recording.py) is compared with its golden file in
tests/prompts/golden/, so a change to any prompt is a diff someone reads. After an intended
change, regenerate them with

    MLGUILD_UPDATE_GOLDEN=1 pytest tests/prompts/test_golden_prompts.py

and review the diff of tests/prompts/golden/ before committing it."""

from __future__ import annotations

import difflib
import os

import pytest
from prompt_recording import GOLDEN, NEAR_END_S, record_prompts

from mlguild.brains.llm import brain as brain_module

UPDATE = os.environ.get("MLGUILD_UPDATE_GOLDEN") == "1"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[dict[str, str], list[dict]]:
    with pytest.MonkeyPatch.context() as patch:  # a home of its own: no other run's memory
        patch.setenv("MLGUILD_HOME", str(tmp_path_factory.mktemp("golden-home")))
        # The optional libraries a prompt names are this machine's: the golden prompts name none.
        patch.setattr(brain_module, "_extra_libraries", lambda: [])
        return record_prompts(tmp_path_factory.mktemp("golden-run"))


@pytest.fixture(scope="module")
def prompts(recorded) -> dict[str, str]:
    return recorded[0]


def test_every_ops_prompt_matches_its_golden_file(prompts):
    if UPDATE:
        for name, text in prompts.items():
            (GOLDEN / f"{name}.txt").write_text(text, encoding="utf-8")
    stale = sorted({p.stem for p in GOLDEN.glob("*.txt")} - set(prompts))
    assert not stale, f"golden files no op renders any more: {stale}"
    for name, text in sorted(prompts.items()):
        path = GOLDEN / f"{name}.txt"
        assert path.is_file(), f"no golden prompt {path.name}: run with MLGUILD_UPDATE_GOLDEN=1 and review it"
        golden = path.read_text(encoding="utf-8")
        diff = "".join(difflib.unified_diff(golden.splitlines(True), text.splitlines(True), path.name, "now"))
        assert text == golden, f"the {name} prompt changed (MLGUILD_UPDATE_GOLDEN=1 regenerates):\n{diff}"


def test_each_prompt_carries_what_the_issue_asks_for(prompts):
    system = prompts["system"]
    # Row counts as a CSV reader counts them, and which figure is which.
    assert "data rows as a CSV reader counts them" in system
    # The exploration's findings reach every later prompt, as the model's summary of its output
    # (asked once, with the whole output), last in the system turn, after the contract.
    assert "correlation of x0 with y: 0.72, the one strong signal" in system
    assert "correlation of x1 with y: -0.07" in prompts["findings"] and "correlation of x1 with y" not in system
    assert system.index("## Script contract") < system.index("## Findings of the exploratory node")
    draft = prompts["draft"]
    assert "independent of the run's other nodes" in draft and "Build on what worked" not in draft
    # History shows titles whole, a failure with its error's last line.
    assert "Logistic curve on x0 -> " in draft
    debug = prompts["debug"]
    assert "KeyError" in debug and "What it printed before it stopped" in debug and "loaded 144 training rows" in debug
    improve = prompts["improve"]
    # Why this parent: here not the best node, a branch the search explores.
    assert "## Why this node" in improve and "is not the best node (the best is n0004" in improve
    assert "never used as a score" in improve and "folds completed: 5 of 5" in improve
    assert "within noise" in improve
    assert f"at most {NEAR_END_S} s this time: the run is near its end" in improve
    assert "Title:" in improve and "build on" in improve
    # The parent's per-fold scores with their spread; fitting the time is part of the one change.
    assert "Per-fold roc_auc (printed by the script, untrusted): 0.91, 0.92, 0.93, 0.94, 0.95" in improve
    assert "spread (sd) 0.016" in improve and "is part of that one change" in improve
    # The contract: per-fold score lines, early stopping on an inner split, the fold cut-off.
    assert "`fold <k>: score <number>, <seconds> s`" in system and "inner split of the fold's training rows" in system
    assert "Stop adding folds once half of the" in system
    evolve, fuse = prompts["evolve"], prompts["fuse"]
    assert "Why this branch:" in evolve and "within noise" in evolve and "within noise" in fuse
    # Evolve and fuse show what the harness measured of each parent, as an improve does.
    assert "### What the harness measured of it\n- Per-fold roc_auc (printed by the script, untrusted)" in evolve
    assert "### What the harness measured of n0002\n- Per-fold roc_auc" in fuse
    assert "### What the harness measured of n0004\n- Per-fold roc_auc" in fuse
    assert "folds completed" in fuse
    assert "did not finish" not in system  # the exploration finished
    assert "best_slope" in prompts["cycle_fix"]
    assert "the test file has" in prompts["brief"] and "these counts are the files'" in prompts["brief"]


def test_every_request_from_the_exploration_on_starts_with_the_one_stable_prefix(recorded):
    # Issue 39: the task, brief and exploration were sent again with every request, in turns
    # that differed from request to request, so a provider's prompt cache could serve none.
    _, calls = recorded
    purposes = [c["purpose"] for c in calls]
    explored = purposes.index("eda")
    # Before the exploration, with no system turn: the brief (the turn holds it) and the idea
    # extraction (a one-line task and the item: the whole prefix would bill it more than itself).
    assert purposes[:explored] == ["brief", "ideas"]
    assert all([m.role for m in c["messages"]] == ["user"] for c in calls[:explored])
    before_findings = calls[explored]["messages"][0].content
    assert len(calls[1]["messages"][0].content) < len(before_findings)
    # The exploration and its summary (asked once) start with the turn as it stood before the
    # findings; every later request with that turn and the findings after it: one prefix,
    # byte for byte, from the exploration on, the cycle's requests and the report included (the
    # reviews: tests/brains/test_prompt_evidence.py).
    assert purposes[explored : explored + 2] == ["eda", "findings"] and purposes.count("findings") == 1
    assert calls[explored + 1]["messages"][0] == calls[explored]["messages"][0]
    later = calls[explored + 2 :]
    assert {"draft", "improve:diff", "evolve", "fuse", "cycle:implement", "report"} <= {c["purpose"] for c in later}
    assert all(c["messages"][0].role == "system" for c in later)
    systems = {c["messages"][0].content for c in later}
    assert len(systems) == 1
    (system,) = systems
    assert system.startswith(before_findings) and "## Findings of the exploratory node" not in before_findings
    assert all(c["messages"][0].content.startswith(before_findings) for c in calls[explored:])
