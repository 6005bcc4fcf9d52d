"""A script that rewrites the scorer is the node that answers for it, whatever its status.

The agent runs from a copy of the package (PYTHONPATH), so the attack rewrites the copy's
scorer files, never the checkout's: a real agent, a real sandbox, the real fingerprint of
the scorer it imported. The script exits 1 without outputs, the case that went unnoticed
until the next scored node took the blame.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_task

import mlguild

PACKAGE = Path(mlguild.__file__).resolve().parent

TAMPER = """
with open({path!r}, "a") as f:
    f.write("\\n# a score of 1.0 for everyone\\n")
raise SystemExit(1)
"""

GOOD = """
import os
from pathlib import Path
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
os.makedirs("output", exist_ok=True)
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={"id": str})
    pd.DataFrame({"id": frame["id"], "y": frame["x0"]}).to_csv("output/" + dst, index=False)
"""

# mode "loop": the agent loop, the tampering node first, then an honest one.
# mode "refit": a refit node run through the node path directly (mlguild.run.node.run_node).
AGENT = r"""
import json, sys
from pathlib import Path
import mlguild
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.run.node import run_node
from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config
from mlguild.core.errors import ScorerIntegrityError
from mlguild.core.protocols import Proposal
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.core.graph import Node
from mlguild.task.folder import load_task

mode, package, runs, task = sys.argv[1:5]
codes = json.loads(sys.argv[5])
assert Path(mlguild.__file__).resolve().parent == Path(package), mlguild.__file__
cfg = load_config(None, ["budget.iterations=3", "search.num_drafts=3", "search.draft_every=0",
                         "sandbox.script_timeout_s=30", "sandbox.kind=local"])
run = create_run(load_task(task), cfg, runs, run_id="r")
brain = ScriptedBrain([Proposal(f"plan {i}", code, {"recipe": f"r{i}"}) for i, code in enumerate(codes)])
agent = Agent(open_session(run, brain, get_sandbox("local")))
try:
    if mode == "loop":
        agent.run_loop()
    else:
        node = Node(id="n0001", op="refit", parents=(), iteration=0)
        run_node(agent.session, node, Proposal("refit", codes[0], {}), reason="refit", timeout_s=30, seed=0,
                 data_dir=run.workspace.data_dir)
except ScorerIntegrityError as exc:
    print("STOPPED", exc.message)
    print("FIX", exc.fix)
    sys.exit(3)
"""


@pytest.fixture
def package_copy(tmp_path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "mlguild", ignore=shutil.ignore_patterns("__pycache__"))
    return src / "mlguild"


@pytest.mark.parametrize("mode", ["loop", "refit"])
def test_the_node_that_tampers_with_the_scorer_is_the_one_flagged(mode, package_copy, tmp_path):
    target = package_copy / "core" / "score.py"
    before = target.read_bytes()
    task = make_task(tmp_path / "task")
    codes = [TAMPER.format(path=str(target)), GOOD]
    proc = subprocess.run(
        [sys.executable, "-c", AGENT, mode, str(package_copy), str(tmp_path / "runs"), str(task), json.dumps(codes)],
        env={**os.environ, "PYTHONPATH": str(package_copy.parent)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert target.read_bytes() != before, "the attack did not run"
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "STOPPED node n0001 changed the scorer's source files" in proc.stdout, proc.stdout
    assert "scorer_tampered" in proc.stdout and "mlguild resume" in proc.stdout
    run = tmp_path / "runs" / "r"
    records = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    finished = [r for r in records if r["type"] == "node_finished"]
    assert [(r["id"], r["status"]) for r in finished] == [("n0001", "scorer_tampered")]
    assert finished[0]["exec"]["status"] == "crash"  # what the script itself did
    assert not any(r["type"] == "node_started" and r["node"]["id"] != "n0001" for r in records), (
        "the run went on after the scorer changed"
    )
    report = (run / "nodes" / "n0001" / "report.md").read_text()
    assert "scorer_tampered" in report and "changed while this script ran" in report
    assert json.loads((run / "nodes" / "n0001" / "score.json").read_text())["status"] == "scorer_tampered"
