"""Harness overhead benchmarks (issue: vertical slice). Run by hand, report the figures:

    .venv/bin/python benchmarks/overhead.py [--iterations 30] [--rows 1000000]

1. Per-iteration harness overhead on a bundled task, read from the journal: the session-clock
   time between two nodes' ends minus the brain's time and the script's own run (spawn to
   exit, as the sandbox measures it). What is
   left is ours: context, files, guard, sandbox start and sweep, validation, scoring, journal
   fsyncs, reports, best/. Target: median <= 0.2 s.
2. Validating and scoring a 1,000,000-row submission (id, probability) against sealed labels,
   in order and shuffled. Target: <= 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.scoring.scorer import Scorer
from mlguild.sources.examples import build_example
from mlguild.task.folder import TaskSpec, load_task


def node_overheads(records: list[dict]) -> list[float]:
    """Per finished node, from its journal: the session-clock time since the previous node
    finished, less the brain's time and the script's own run. What is left is the harness's."""
    out, last = [], 0.0
    for rec in records:
        if rec["type"] == "session_started":
            last = 0.0
        elif rec["type"] == "node_finished":
            timing, now = rec["timing"], rec["session_elapsed_s"]
            out.append(now - last - timing.get("brain_s", 0.0) - timing.get("exec_s", 0.0))
            last = now
    return out


def loop_overhead(iterations: int, workdir: Path, repeats: int = 3) -> list[float]:
    """The harness overhead of ``repeats`` runs of ``iterations`` scripted nodes on the churn
    example (memory on, as a run has it); the first node of each run pays one-off imports."""
    task = load_task(build_example("churn", workdir / "churn"))
    overheads: list[float] = []
    for repeat in range(repeats):
        cfg = load_config(None, [f"budget.iterations={iterations}", "search.draft_every=0"])
        run = create_run(task, cfg, workdir / f"runs{repeat}")
        agent = Agent(open_session(run, ScriptedBrain()))
        agent.run_loop()
        overheads += node_overheads(run.journal.records)[1:]
        run.close()
    return overheads


def scoring_time(rows: int, workdir: Path) -> dict[str, float]:
    rng = np.random.default_rng(0)
    ids = np.array([f"{i:07d}" for i in range(rows)], dtype=object)
    truth = rng.integers(0, 2, rows)
    pd.DataFrame({"id": ids, "y": truth}).to_csv(workdir / "answers.csv", index=False)
    sub = pd.DataFrame({"id": ids, "y": np.clip(truth * 0.3 + rng.random(rows) * 0.7, 0, 1)})
    sub.to_csv(workdir / "ordered.csv", index=False)
    sub.sample(frac=1.0, random_state=1).to_csv(workdir / "shuffled.csv", index=False)
    spec = TaskSpec(name="bench", task_type="binary", metric="roc_auc", id_column="id", target_columns=["y"],
                    submission_columns=["id", "y"], positive_label="1")  # fmt: skip
    scorer = Scorer.from_file(spec, workdir / "answers.csv")  # what a run builds once
    out = {}
    for name in ("ordered", "shuffled"):
        times = []
        for _ in range(3):
            started = time.perf_counter()
            score = scorer.score(workdir / f"{name}.csv")
            times.append(time.perf_counter() - started)
        out[name] = min(times)
        out[f"{name}_auc"] = score.value
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        overheads = loop_overhead(args.iterations, work)
        med, p90 = statistics.median(overheads), sorted(overheads)[int(0.9 * (len(overheads) - 1))]
        print(
            f"per-iteration harness overhead over {len(overheads)} iterations: "
            f"median {med * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms, max {max(overheads) * 1000:.0f} ms "
            f"(target: median <= 200 ms) -> {'OK' if med <= 0.2 else 'MISSED'}"
        )
        scoring = scoring_time(args.rows, work)
        worst = max(scoring["ordered"], scoring["shuffled"])
        print(
            f"validate + score {args.rows:,} rows: ordered {scoring['ordered']:.2f} s, shuffled {scoring['shuffled']:.2f} s "
            f"(target: <= 2 s) -> {'OK' if worst <= 2.0 else 'MISSED'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
