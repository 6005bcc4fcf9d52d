"""Whole runs of the recipe brain as the rows grow (issue 40, item 4). Run by hand, report the figures:

    .venv/bin/python benchmarks/scale_runs.py [--rows 10000,100000,1000000] [--budget 10m]
                                              [--peer lightgbm|none] [--workdir DIR]

The data (``--data``): ``synthetic`` (the default), scikit-learn's ``make_classification``
(30 columns, 12 informative, 3% of labels flipped, seeded), a binary task that stays hard at a
million rows; no data set a package ships has that many labelled rows. ``breast_cancer``:
scikit-learn's breast-cancer set resampled with 5% noise (``benchmarks/scale.py``'s rows), for
time and memory only: its 569 distinct rows, repeated, make every model score about 1.0. Either
is handed over as one CSV (``csv:PATH``: a fifth of the rows become the test rows, their labels
sealed). For each size,
``mlguild run --time BUDGET --brain recipes --no-memory`` runs in a process of its own, and
then, one after the other on the same machine, a default LightGBM on all labelled rows
(``benchmarks/peers/run_lightgbm.py``, as in ``vs_automl.py``). Printed per size:

- ``create s``: from the command's start to the run folder built (the task folder from the
  CSV, the firewall, the verifier, the profile);
- ``search s`` and ``final s``: the search's and the final stage's seconds (``mlguild status
  --json``), and ``total s``, the command's wall time;
- ``nodes``: the search nodes that finished, those killed by their time limit and those whose
  estimated cost kept them from starting;
- ``harness MB``: the peak resident memory of the mlguild process (its ``VmHWM``, read every
  half second), and when it was reached (``harness peak at s``, from the command's start: with
  ``create s``, ``search s`` and ``final s`` it places the peak in a stage); ``script MB``: the
  largest peak of a node's process tree, as the sandbox measured it;
- ``samples``: how many nodes trained on each row sample (``all``: every training row) and
  how many of them were grown onto more rows (``grown``; mlguild.run.samples);
- the final test score, the peer's, and their ratio (above 1: mlguild better).

Growth exponents between the first and the last size are printed for the times and the
memory; one above 1.15 on a figure that is at least 10 s or 500 MB at the largest size is
flagged ``SUPERLINEAR``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import base_frame, with_rows, write_csv
from vs_automl import mlguild_command, parse_duration, run_peer

from mlguild.sources.resolve import task_name
from mlguild.task.folder import load_task

LIMIT = 1.15
FIGURES = ("create s", "search s", "final s", "total s", "harness MB", "script MB")


def synthetic(rows: int) -> pd.DataFrame:
    """A binary task of ``rows`` rows from scikit-learn's generator, the same for every size."""
    from sklearn.datasets import make_classification

    x, y = make_classification(
        n_samples=rows, n_features=30, n_informative=12, n_redundant=6, flip_y=0.03, random_state=0
    )
    frame = pd.DataFrame(x.round(5), columns=[f"f{i:02d}" for i in range(x.shape[1])])
    frame["diagnosis"] = np.where(y == 1, "yes", "no")
    return frame


def peak_mb(pid: int) -> float:
    """The peak resident memory of process ``pid`` so far (VmHWM), in MB; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_mlguild(source: str, target: str, name: str, budget_s: float, work: Path) -> dict:
    """``mlguild run`` on ``source`` (``csv:PATH``: the task folder is built from the CSV within
    the command, as a user's run builds it), its process's peak memory watched; its figures."""
    runs, run_id = work / "runs", name
    log = work / f"mlguild-{name}.log"
    env = {**os.environ, "MLGUILD_HOME": str(work / "home"), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    command = [*mlguild_command(), "run", source, "--target", target, "--time", f"{budget_s:g}s", "--brain", "recipes"]
    command += ["--runs-dir", str(runs), "--run-id", run_id, "--no-memory"]
    started, started_at = time.monotonic(), time.time()
    peak, peak_at = [0.0], [0.0]  # the harness's peak so far, and when it was reached (s from the start)
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

        def watch() -> None:
            while proc.poll() is None:
                now = peak_mb(proc.pid)
                if now > peak[0] * 1.01:  # a new peak, not the last megabytes of one
                    peak_at[0] = time.monotonic() - started
                peak[0] = max(peak[0], now)
                time.sleep(0.5)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        proc.wait(timeout=2 * budget_s + 1800)
        watcher.join()
    total = time.monotonic() - started
    run_dir = runs / run_id
    journal = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines() if line.strip()]
    created = next(e["ts"] for e in journal if e["type"] == "run_started")
    status = json.loads(
        subprocess.run(
            [*mlguild_command(), "status", str(run_dir), "--json"], capture_output=True, text=True, env=env, check=True
        ).stdout
    )
    finished = [e for e in journal if e["type"] == "node_finished"]
    started_nodes = [e["node"] for e in journal if e["type"] == "node_started" and e["node"]["op"] != "refit"]
    samples: dict[str, int] = {}  # nodes per row sample they trained on (mlguild.run.samples)
    for node in started_nodes:
        rows = (node.get("meta") or {}).get("train_rows") or "all"
        samples[str(rows)] = samples.get(str(rows), 0) + 1
    scripts = max((float((e.get("exec") or {}).get("peak_tree_rss_mb") or 0) for e in finished), default=0.0)
    grade_path = run_dir / "audit" / "final_grade.json"
    grade = json.loads(grade_path.read_text()) if grade_path.exists() else {}
    budget = status["budget"]
    return {
        "create s": created - started_at,
        "search s": float(budget.get("search_s") or 0),
        "final s": float(budget.get("final_s") or 0),
        "total s": total,
        "harness MB": peak[0],
        "harness peak at s": round(peak_at[0], 1),  # which stage it was in: against create, search, final s
        "script MB": scripts,
        "nodes": sum(1 for n in status.get("nodes", []) if n.get("op") not in ("refit", "eda")),
        "grown": sum(1 for n in started_nodes if n["op"] == "grow"),
        "samples": samples,
        "timed_out": budget.get("timed_out"),
        "not_started": budget.get("not_started"),
        "score": grade.get("test_score"),
        "refit": grade.get("refit"),
        "rc": proc.returncode,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000,1000000")
    parser.add_argument("--budget", default="10m")
    parser.add_argument("--peer", default="lightgbm", choices=("lightgbm", "none"))
    parser.add_argument("--data", default="synthetic", choices=("synthetic", "breast_cancer"))
    parser.add_argument("--workdir", type=Path, help="keep the data, runs and logs here (default: a temporary folder)")
    args = parser.parse_args()
    budget_s = parse_duration(args.budget)
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="scale_runs-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ["MLGUILD_HOME"] = str(work / "home")
    sizes = [int(x) for x in args.rows.split(",") if x]
    results = []
    for rows in sizes:
        name = f"rows{rows}"
        csv = work / f"{name}.csv"
        if not csv.exists():  # the same seeded rows as a run before it in this work folder wrote
            frame = synthetic(rows) if args.data == "synthetic" else with_rows(base_frame(), rows)
            write_csv(frame, csv)
            del frame
        got = run_mlguild(f"csv:{csv}", "diagnosis", name, budget_s, work)
        task = load_task(work / "home" / "tasks" / task_name("csv", str(csv)))  # the folder the run built
        if args.peer != "none":
            spec_json = work / f"{name}.spec.json"
            spec_json.write_text(json.dumps(task.spec.public_dict(), indent=2))
            peer = run_peer(
                "lightgbm", task, spec_json, name, budget_s, work, 2 * budget_s + 1800, work, os.cpu_count() or 1
            )
            got["peer"] = peer.get("score")
            got["peer s"] = peer.get("wall_s")
        results.append((rows, got))
        print(f"  {rows:>10,}: {json.dumps(got)}", flush=True)
    print(
        f"\n{'rows':>10} | "
        + " | ".join(f"{f:>10}" for f in FIGURES)
        + " | nodes (killed, not started) | score | peer | ratio"
    )
    for rows, got in results:
        figures = " | ".join(f"{got[f]:10.1f}" for f in FIGURES)
        ratio = got["score"] / got["peer"] if got.get("score") and got.get("peer") else float("nan")
        print(
            f"{rows:>10,} | {figures} | {got['nodes']} ({got['timed_out']}, {got['not_started']}) | "
            f"{got['score']} | {got.get('peer')} | {ratio:.4f}"
        )
    flagged = []
    if len(results) > 1:
        (small, first), (large, last) = results[0], results[-1]
        line = []
        for figure in FIGURES:
            k = (
                math.log(last[figure] / first[figure]) / math.log(large / small)
                if first[figure] > 0 < last[figure]
                else float("nan")
            )
            line.append(f"{k:10.2f}")
            big = last[figure] >= (500 if figure.endswith("MB") else 10)
            if k > LIMIT and big:
                flagged.append(f"{figure} grows as rows^{k:.2f}")
        print(f"{'exponent':>10} | " + " | ".join(line))
    for line in flagged:
        print(f"SUPERLINEAR: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
