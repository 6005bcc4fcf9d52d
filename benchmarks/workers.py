"""Worker benchmarks (issue 13). Run by hand on an idle machine, report the figures:

    .venv/bin/python benchmarks/workers.py rate [--budget 3m] [--examples titanic,churn]
    .venv/bin/python benchmarks/workers.py ray [--nodes 12] [--cluster | --address HOST:PORT]

``rate``: finished nodes per hour with 1 worker against 2, the recipe brain on bundled
examples whose scripts take seconds (the "short scripts" case, where the harness's own work
per node counts most). Each pair runs one after the other with the same budget; a node counts
when it finished during the search (the final refit is left out). One worker's scripts may
use every CPU (``MLGUILD_THREADS``); two workers' scripts get half each, pinned apart. Target:
at least 1.7 times the rate with 2 workers on 2 cores.

``ray``: the per-node overhead of running scripts as Ray tasks on a local Ray instance
against running them here, one worker each, on nodes whose script does almost nothing (so
the difference is the overhead): mean wall time per node, and the difference. Every Ray task
carries its node's folder and the data through the object store (mlguild.run.ray_ship), so
this is also the cost of needing no shared disk. ``--cluster``: on a two-node cluster of
separate ``ray start`` processes on this machine (tests/run/ray_cluster.py, 1 CPU each, no
Ray process allowed into the run folders) instead of the in-process instance;
``--address``: on the cluster already running there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlguild.config import load_config, parse_duration
from mlguild.rundir.folder import create_run
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task

TRIVIAL = """Plan: write the constant prediction.
```python
import os
import pandas as pd
from pathlib import Path
data = Path(os.environ["MLGUILD_DATA"])
os.makedirs("output", exist_ok=True)
sample = pd.read_csv(data / "sample_submission.csv")
sample.to_csv("output/submission.csv", index=False)
holdout = pd.read_csv(data / "holdout.csv")
out = sample.iloc[:0].reindex(range(len(holdout)))
out[sample.columns[0]] = holdout[sample.columns[0]].values
for column in sample.columns[1:]:
    out[column] = sample[column].iloc[0]
out.to_csv("output/holdout.csv", index=False)
```
"""


def _search_rate(run_dir: Path) -> tuple[int, float]:
    """(search nodes finished, seconds into the session when the last of them finished)."""
    records = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines() if line.strip()]
    ops = {r["node"]["id"]: r["node"]["op"] for r in records if r["type"] == "node_started"}
    done = [r for r in records if r["type"] == "node_finished" and ops.get(r["id"]) not in ("refit", "eda")]
    return len(done), max((float(r.get("session_elapsed_s", 0.0)) for r in done), default=0.0)


def bench_rate(budget_s: float, examples: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="mlguild-workers-"))
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "160", "MLGUILD_HOME": str(work / "home")}
    print("| example | 1 worker: nodes | nodes/hour | 2 workers: nodes | nodes/hour | ratio |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for name in examples:
        task = build_example(name, work / "tasks" / name)
        rates = []
        for workers in (1, 2):
            run_id = f"{name}-w{workers}"
            cmd = [
                sys.executable, "-m", "mlguild.cli.app", "run", str(task), "--brain", "recipes",
                "--time", f"{budget_s:g}s", "--workers", str(workers), "--no-memory",
                "--runs-dir", str(work / "runs"), "--run-id", run_id,
            ]  # fmt: skip
            with (work / f"{run_id}.log").open("w") as log:
                subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=3 * budget_s + 300)
            nodes, seconds = _search_rate(work / "runs" / run_id)
            rates.append((nodes, 3600 * nodes / seconds if seconds else 0.0))
        ratio = rates[1][1] / rates[0][1] if rates[0][1] else float("nan")
        ratios.append(ratio)
        print(f"| {name} | {rates[0][0]} | {rates[0][1]:.0f} | {rates[1][0]} | {rates[1][1]:.0f} | {ratio:.2f} |")
    print(f"mean ratio, 2 workers over 1: {statistics.mean(ratios):.2f} (target >= 1.7 on 2 cores); runs: {work}")


def bench_ray(nodes: int, cluster: bool = False, address: str = "auto") -> None:
    from mlguild.run.ray_workers import connect

    work = Path(tempfile.mkdtemp(prefix="mlguild-ray-"))
    task = load_task(build_example("titanic", work / "task"))
    started_cluster = None
    if cluster:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "run"))
        from ray_cluster import start_cluster, stop_cluster

        os.environ["RAY_AUTH_MODE"] = "token"  # the cluster's, read when Ray is imported below
        started_cluster = start_cluster(work)
        address = started_cluster.address
    try:
        print(connect(address))
        _compare(task, work, nodes)
    finally:
        if started_cluster is not None:
            import ray

            ray.shutdown()
            stop_cluster(started_cluster)


def _compare(task, work: Path, nodes: int) -> None:
    from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
    from mlguild.llm import ScriptedLLM
    from mlguild.run.loop import Agent
    from mlguild.run.ray_workers import RaySandbox
    from mlguild.run.session import open_session
    from mlguild.sandbox import get_sandbox

    per_node, hosts = {}, set()
    for where in ("local", "ray", "local again"):
        cfg = load_config(
            None,
            [f"budget.iterations={nodes}", "brain.eda=false", "memory.enabled=false", "search.policy=greedy"],
        )
        run = create_run(task, cfg, work / "runs")
        sandbox = get_sandbox(cfg.sandbox.kind, llm_code=True)
        if where == "ray":
            sandbox = RaySandbox(sandbox)
        brain = LLMBrain(ScriptedLLM(default=TRIVIAL), LLMBrainOptions(diff_mode=False))
        agent = Agent(open_session(run, brain, sandbox))
        started = time.monotonic()
        agent.run_loop(workers=1)
        per_node[where] = (time.monotonic() - started) / nodes
        failed = [n.id for n in agent.session.state.graph if not n.ok]
        print(f"{where}: {per_node[where] * 1000:.0f} ms per node over {nodes} nodes (failed: {failed or 'none'})")
        if where == "ray":
            finished = [r for r in run.journal.records if r["type"] == "node_finished"]
            hosts = {r["exec"].get("host", "") for r in finished}
        run.close()
    print(f"Ray nodes that ran scripts: {len(hosts)}")
    local = min(per_node["local"], per_node["local again"])  # the first run pays for cold caches
    print(
        f"Ray overhead per node: {(per_node['ray'] - local) * 1000:.0f} ms (ray / local: {per_node['ray'] / local:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    rate = sub.add_parser("rate", help="finished nodes per hour, 1 worker against 2")
    rate.add_argument("--budget", default="3m", help="time budget of each run (default 3m)")
    rate.add_argument("--examples", default="titanic,churn", help="comma-separated bundled examples")
    ray = sub.add_parser("ray", help="per-node overhead of Ray against local workers")
    ray.add_argument("--nodes", type=int, default=12)
    ray.add_argument("--cluster", action="store_true", help="on a two-node cluster of `ray start` processes here")
    ray.add_argument("--address", default="auto", help="the Ray cluster to use (default: this machine's, or local)")
    args = parser.parse_args()
    if args.what == "rate":
        bench_rate(parse_duration(args.budget), args.examples.split(","))
    else:
        bench_ray(args.nodes, args.cluster, args.address)


if __name__ == "__main__":
    main()
