"""How a run's own costs grow with the data (issue 25, item 10). Run by hand, report the figures:

    .venv/bin/python benchmarks/scale.py [--rows 10000,100000,1000000] [--columns 10,1000,50000]
                                         [--column-rows 200] [--repeats 1]

Data that a package ships: scikit-learn's breast-cancer set (569 rows, 30 measurements, a
binary diagnosis). The row sweep resamples its rows to 10k, 100k and 1M rows (30 columns), each
measurement multiplied by 1 + 5% Gaussian noise and rounded to 5 decimals, so that values do not
repeat (repeated values cost a CSV reader far less than real data does); the column sweep
repeats its measurements, renamed, to 10, 1,000 and 50,000 columns on its first
``--column-rows`` rows. Each point's task folder is made from its CSV in a process of its own
(``init MB``: that process's peak resident memory) and the rest runs in another (``create MB``
after the run is created, ``peak MB`` at the end), so each peak is its step's alone. Each point is a CSV as a user hands it over (``csv:PATH``), and the
costs measured are the harness's, never a model's:

- init: reading the CSV into a task folder (target, metric, time order and text columns inferred);
- firewall, verifier, profile: the three parts of creating a run (``rundir/folder``);
- score: scoring one holdout submission on the sealed labels (``scoring/scorer``);
- pools, memory: what a finished node adds to the run's pools and to the memory (per node);
- draft: the first draft's context and the recipe brain writing it (the draft's script is
  stopped after a second: its training is the model's cost, not the harness's).

For each cost the growth exponent between the sweep's end points (log time / log size) is
printed; one above 1.15 (faster than linear, allowing for noise) on a cost that takes at least
a second at the largest point is flagged ``SUPERLINEAR`` (milliseconds are noise). A small
point is measured first and thrown away: it pays the one-off imports.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from mlguild import memory as memory_module
from mlguild import pools as pools_module
from mlguild.brains.recipes import RecipeBrain
from mlguild.config import load_config
from mlguild.run.context import ContextBuilder
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir import folder as folder_module
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.scoring.held_rows import HeldRows
from mlguild.scoring.scorer import Scorer
from mlguild.sources.resolve import resolve_task
from mlguild.task.folder import Task, load_task
from mlguild.task.spec import HOLDOUT_SAMPLE

COSTS = ("init", "firewall", "verifier", "profile", "score", "pools", "memory", "draft")
COLUMNS = (*COSTS, "init MB", "create MB", "peak MB")
LIMIT = 1.15  # a growth exponent above this is faster than linear, noise allowed for
times: dict[str, float] = defaultdict(float)


def timed(owner: object, name: str, label: str) -> None:
    """Add the time of every call of ``owner.name`` to ``times[label]``."""
    original: Callable = getattr(owner, name)

    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            times[label] += time.perf_counter() - started

    setattr(owner, name, wrapper)


def instrument() -> None:
    timed(folder_module, "build_workspace", "firewall")
    timed(folder_module, "verify_workspace", "verifier")
    timed(folder_module, "profile_workspace", "profile")
    timed(pools_module.Pools, "node_finished", "pools")
    timed(memory_module.Memory, "record", "memory")
    timed(ContextBuilder, "build", "draft")  # the first draft: its context, then the recipe brain's proposal
    timed(RecipeBrain, "propose", "draft")


def base_frame() -> pd.DataFrame:
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.data.copy()
    frame.columns = [c.replace(" ", "_") for c in frame.columns]
    frame["diagnosis"] = data.target.map({0: "malignant", 1: "benign"})
    return frame


def with_rows(base: pd.DataFrame, rows: int) -> pd.DataFrame:
    """``rows`` rows drawn from ``base`` with replacement, each measurement times 1 + 5% noise."""
    rng = np.random.default_rng(0)
    frame = base.iloc[rng.integers(0, len(base), rows)].reset_index(drop=True)
    for column in frame.columns:
        if column != "diagnosis":
            values = frame[column].to_numpy(dtype=float)
            frame[column] = np.round(values * (1 + 0.05 * rng.standard_normal(rows)), 5)
    return frame


def with_columns(base: pd.DataFrame, columns: int, rows: int) -> pd.DataFrame:
    """``base``'s measurements repeated (renamed ``NAME_k``) to ``columns`` input columns."""
    features = [c for c in base.columns if c != "diagnosis"]
    head = base.head(rows)
    block = {}
    for i in range(columns):
        name = features[i % len(features)]
        block[f"{name}_{i // len(features)}"] = head[name].to_numpy()
    frame = pd.DataFrame(block)
    frame["diagnosis"] = head["diagnosis"].to_numpy()
    return frame


def peak_mb() -> float:
    """This process's peak resident memory so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_init(csv: Path) -> dict:
    """The seconds and the peak memory (MB) of turning one CSV into a task folder, and its path."""
    started = time.perf_counter()
    task = resolve_task(f"csv:{csv}", target="diagnosis", fresh=True)
    return {"init": time.perf_counter() - started, "init MB": peak_mb(), "task": str(task.root)}


def measure(task: Task, workdir: Path) -> dict[str, float]:
    """The harness's costs for one task folder (seconds), and its peak memory (MB) after
    creating the run and at the end."""
    times.clear()
    cfg = load_config(
        None,
        [
            "budget.iterations=1",
            "sandbox.script_timeout_s=1",
            "memory.enabled=true",
            f"memory.path={workdir / 'memory.sqlite'}",
            "brain.name=recipes",
        ],
    )
    run = create_run(task, cfg, workdir / "runs")
    times["create MB"] = peak_mb()
    try:
        scorer = Scorer.from_file(run.spec, run.workspace.holdout_answers)
        ws = run.workspace
        started = time.perf_counter()
        # As the executor scores a node: the whole file checked, the holdout part scored (the
        # holdout inputs also hold the confirmation split's rows).
        with HeldRows(run.spec, ws.data_dir, ws.sealed_dir, scorer).parts(ws.data_dir / HOLDOUT_SAMPLE) as (held, _):
            scorer.score(held)
        times["score"] = time.perf_counter() - started
        agent = Agent(open_session(run, RecipeBrain(seed=0), get_sandbox("local")))
        agent.run_loop()
        agent.session.close()
    finally:
        run.close()
    times["peak MB"] = peak_mb()
    return {cost: times.get(cost, float("nan")) for cost in COLUMNS if cost not in ("init", "init MB")}


def exponent(sizes: list[int], seconds: list[float]) -> float:
    """The growth exponent between the first and the last point."""
    if seconds[0] <= 0 or seconds[-1] <= 0 or math.isnan(seconds[0]) or math.isnan(seconds[-1]):
        return float("nan")
    return math.log(seconds[-1] / seconds[0]) / math.log(sizes[-1] / sizes[0])


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as a CSV, by Arrow's writer (pandas takes minutes over ten million rows)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    pacsv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), path)


def point(frame: pd.DataFrame) -> dict[str, float]:
    """One point of a sweep: its CSV written here; the task folder made from it in a process of
    its own, and the rest measured in another (so that each peak memory is its step's alone)."""
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "data.csv"
        write_csv(frame, csv)
        del frame
        env = {**os.environ, "MLGUILD_HOME": str(Path(tmp) / "home")}
        init = child(["--init", str(csv)], env)
        task = init.pop("task")
        return {**init, **child(["--point", task], env)}


def child(arguments: list[str], env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, __file__, *arguments], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"a point failed ({' '.join(arguments)}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def warm_up(folder: Path) -> Task:
    """A small task folder made from a CSV in ``folder``: the one-off imports, paid before any
    measure."""
    small = folder / "small.csv"
    with_rows(base_frame(), 500).to_csv(small, index=False)
    return resolve_task(f"csv:{small}", target="diagnosis", fresh=True)


def measure_point(task_root: Path) -> dict[str, float]:
    """The costs of one task folder, after a small run that pays the one-off imports."""
    instrument()
    with tempfile.TemporaryDirectory() as tmp:
        measure(warm_up(Path(tmp)), Path(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        return measure(load_task(task_root), Path(tmp))


def sweep(name: str, sizes: list[int], make: Callable[[int], pd.DataFrame], repeats: int) -> list[str]:
    """Measure every size (the fastest of ``repeats``), print the table; the flagged costs."""
    results: list[dict[str, float]] = []
    for size in sizes:
        best: dict[str, float] = {}
        for _ in range(repeats):
            got = point(make(size))
            best = {c: min(best.get(c, math.inf), got[c]) for c in COLUMNS}
        results.append(best)
        print(f"  {name} {size:>9,}: " + "  ".join(f"{c} {best[c]:.3f}" for c in COLUMNS), flush=True)
    print(f"\n{name:>9} | " + " | ".join(f"{c:>9}" for c in COLUMNS))
    for size, row in zip(sizes, results, strict=True):
        print(f"{size:>9,} | " + " | ".join(f"{row[c]:9.3f}" for c in COLUMNS))
    flagged = []
    line = []
    for cost in COSTS:
        k = exponent(sizes, [r[cost] for r in results])
        mark = " SUPERLINEAR" if k > LIMIT and results[-1][cost] >= 1.0 else ""
        line.append(f"{k:8.2f}" if not math.isnan(k) else "     n/a")
        if mark:
            flagged.append(f"{cost} grows as {name}^{k:.2f}")
    print(f"{'exponent':>9} | " + " | ".join(line) + "\n")
    return flagged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000,1000000")
    parser.add_argument("--columns", default="10,1000,50000")
    parser.add_argument("--column-rows", type=int, default=200, help="rows of the column sweep's tables")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--init", help=argparse.SUPPRESS)  # a point's task folder, in a child process
    parser.add_argument("--point", help=argparse.SUPPRESS)  # the rest of a point, in another
    args = parser.parse_args()
    if args.init:
        with tempfile.TemporaryDirectory() as tmp:
            warm_up(Path(tmp))
        print(json.dumps(measure_init(Path(args.init))))
        return 0
    if args.point:
        print(json.dumps(measure_point(Path(args.point))))
        return 0
    base = base_frame()
    rows = [int(x) for x in args.rows.split(",") if x]
    columns = [int(x) for x in args.columns.split(",") if x]
    flagged: list[str] = []
    if rows:
        flagged += sweep("rows", rows, lambda n: with_rows(base, n), args.repeats)
    if columns:
        flagged += sweep("columns", columns, lambda n: with_columns(base, n, args.column_rows), args.repeats)
    for line in flagged:
        print(f"SUPERLINEAR: {line}")
    print("every cost grows at most linearly" if not flagged else f"{len(flagged)} cost(s) grow faster than linearly")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
