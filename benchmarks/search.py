"""Search benchmarks (issue 11). Run by hand, report the figures:

    .venv/bin/python benchmarks/search.py select [--nodes 10000]
    .venv/bin/python benchmarks/search.py retrieve [--records 10000]
    .venv/bin/python benchmarks/search.py compare [--budget 10m] [--seeds 3] [--examples churn,ames] [--side-by-side]
    .venv/bin/python benchmarks/search.py transfer STORE.sqlite...
    .venv/bin/python benchmarks/search.py warm [--budget 10m] [--seeds 1] [--side-by-side] [--from others|same|corpus[,...]]
                                               [--corpus 18] [--corpus-budget 2m] [--corpus-from DIR]

``select``: the time one Monte Carlo graph search choice takes on a graph of ``--nodes``
nodes (target: <= 5 ms at 10,000). The graph is grown by the policy itself on a synthetic
task (each draft starts a branch of random quality, each improve moves its parent's score by
a little noise, one node in ten fails), so its shape is the shape the search makes. Two cases:
the live run (the policy saw the graph grow and takes in one new node per choice), and the
first choice after a resume (a new policy takes in the whole graph at once).

``retrieve``: the time memory retrieval takes with a shared store of ``--records`` experience
records (target: <= 20 ms a search at 10,000), by BM25 alone and, when the [embeddings] extra
is installed, BM25 and sentence embeddings fused. Timed as a run does it: one recall per
proposal, with a new query (its embedding included), which searches this run's own records
(300) for successes and for failures and the shared store for similar tasks; and one search
of the shared store alone, with a new query and with a query already embedded. The records
are made from a vocabulary of real plan and failure phrases, so the index has a realistic
spread of words.

``compare``: mcgs against greedy with the recipe brain on the bundled examples, at equal
budgets, each policy with each seed (``--no-memory``: cold runs). Per run: the final
submission's sealed test score (the run's own once-only grade) and its **selection regret**,
the best test score among all its scored nodes minus the chosen one's (the benchmark grades
every node's test predictions afterwards, outside the run: nothing the search saw). Targets:
mcgs at least equal to greedy on every example, and lower regret on average. ``--side-by-side``
runs each pair at once, each policy pinned to half the CPUs; ``--out`` keeps the rows, and a
rerun with the same ``--out`` and budget skips the runs already there.

``transfer``: how far the tasks whose records the given memory stores hold foretell each
other's results, per task type (``memory.priors.measure_transfer``, what a run measures on its
store at its start): the slope of each task's per-move mean gain, run-time ratio and family
rank on the other tasks', less its standard error (1: in full, 0: not at all).

``warm``: what the memory shared by runs is worth. Every example first runs cold: with the
memory on but its own empty store, so it reads nothing and keeps everything it does (a run
never reads its own records from the shared store, so an empty store is a cold run). Then,
per example and per source of ``--from`` (comma-separated: each measured against the same
cold runs), a warm run with the same seed whose store holds:

- ``others``: the other examples' cold records only;
- ``same``: its own cold run's records, as a second run on the same task (issue 30's target:
  the median ratio below at most 0.5);
- ``corpus``: the records of cold runs on ``--corpus`` data sets of the gauntlet's list
  (``gauntlet_datasets.csv``, chosen by its rule, not by hand): its first data sets with at
  least 500 rows and no variant, as many of each task type as the corpus size allows, leaving
  out the data the examples are built from (each of ``--corpus-budget``, seed 0): what memory
  is worth to a user whose store holds many earlier tasks, most of them unlike this one.
  ``--corpus-from`` reuses the corpus runs of an earlier warm benchmark (the folder it
  printed) instead of running them again.

Reported per source, per example and seed: the cold run's final best holdout score, when the
cold run first reached it, when the warm run did, and the ratio; the median over every pair
(a warm run that never got there counts as infinitely slow) and per example; a column
counting the warm run's nodes whose plan cites earlier runs (0: the memory changed none of
the recipe brain's choices, so the ratio is timing noise alone). For ``same`` a PASS/FAIL
line against the 0.5 target. For ``others`` and ``corpus`` (memory must not hurt, issue 30)
a second table: per example, the target is the worst of the cold runs' final bests (every
cold run reached it); each warm run must reach it no later than the cold run of its seed did
plus the cold runs' seed spread (the slowest cold time minus the fastest), with a PASS/FAIL
line naming any pair that did not (it needs two seeds or more). Before the warm runs it prints
the transfer each example's run measures on its store (memory.priors.measure_transfer), and
the load average at the start, after each seed and at the end (the runs are timed by the wall
clock). ``--side-by-side`` runs one run per CPU at once, each pinned to its CPU with one
thread.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mlguild.config import BudgetConfig, MemoryConfig, SearchConfig, parse_duration
from mlguild.core.errors import MlguildError
from mlguild.core.graph import Evidence
from mlguild.memory import Memory, MemoryStore, Retriever, TaskTraits, prior_records
from mlguild.memory.embed import QueryVectors, load_embedder
from mlguild.memory.experience import Experience
from mlguild.memory.priors import measure_transfer, transfer_by_type
from mlguild.metrics import get_metric
from mlguild.rundir.folder import open_run, scorers_for
from mlguild.rundir.replay import replay
from mlguild.search import MCGSPolicy, Node, SearchGraph
from mlguild.sources.examples import EXAMPLES, build_example
from mlguild.task.folder import load_task

PHRASES = [
    "target encoding of high cardinality categories",
    "date features from the timestamp column",
    "TypeError cannot subtract tz-naive and tz-aware datetimes",
    "lower learning rate with more boosting rounds",
    "TF-IDF word n-grams into a linear model",
    "log transform of the skewed target",
    "class weights for the rare minority class",
    "MemoryError one-hot encoding of a huge column",
    "KeyError column missing in the test file",
    "LightGBM with native categorical features",
    "CatBoost with ordered target statistics",
    "five-fold stratified cross-validation",
    "stronger L2 penalty on the linear model",
    "drop near-constant columns",
    "timeout: the script ran out of time while training",
    "blend of the best node of three branches",
]
QUERIES = [
    "improve lightgbm learning rate boosting rounds",
    "debug TypeError timestamp timezone subtract",
    "draft binary roc_auc categorical numeric text",
    "memory error one-hot huge categorical column",
]


def grow(policy: MCGSPolicy, n_nodes: int, seed: int = 0) -> tuple[SearchGraph, list[float]]:
    """Grow a graph of ``n_nodes`` with ``policy``; return it and each choice's time (s)."""
    rng = random.Random(seed)
    graph = SearchGraph("maximize", Evidence())  # as a run's graph: promotion by evidence
    times = []
    while len(graph) < n_nodes:
        started = time.perf_counter()
        action = policy.select(graph, len(graph))
        times.append(time.perf_counter() - started)
        failed = rng.random() < 0.1
        if action.op in ("improve", "evolve", "fuse", "rerun"):
            score = max(graph[p].score for p in action.parents) + rng.gauss(0.0005, 0.005)
        else:
            score = rng.uniform(0.5, 0.8)
        graph.add(
            Node(
                id=graph.next_id(),
                op=action.op,
                parents=action.parents,
                iteration=len(graph),
                status="crash" if failed else "scored",
                score=None if failed else score,
                timing={"exec_s": 1.0},
            )
        )
    return graph, times


def bench_select(n_nodes: int) -> None:
    def policy() -> MCGSPolicy:
        cfg = SearchConfig(policy="mcgs", fuse_every=0)
        return MCGSPolicy(cfg, BudgetConfig(iterations=n_nodes))

    live = policy()
    started = time.perf_counter()
    graph, times = grow(live, n_nodes)
    grown_s = time.perf_counter() - started
    last = sorted(times[-1000:])
    print(f"graph: {len(graph)} nodes grown by the policy in {grown_s:.1f} s")
    print(
        f"live select, last 1000 choices: median {1000 * statistics.median(last):.3f} ms, "
        f"p90 {1000 * last[900]:.3f} ms, max {1000 * last[-1]:.3f} ms"
    )
    resumed = []
    for _ in range(5):
        fresh = policy()
        started = time.perf_counter()
        fresh.select(graph, len(graph))
        resumed.append(time.perf_counter() - started)
    print(
        f"first select after a resume (takes in all {len(graph)} nodes): median {1000 * statistics.median(resumed):.1f} ms"
    )
    ops: dict[str, int] = {}
    for node in graph:
        ops[node.op] = ops.get(node.op, 0) + 1
    print(f"operations: {ops}")


def bench_retrieve(n_records: int) -> None:
    rng = random.Random(0)
    traits = TaskTraits("binary", "roc_auc", 10_000, 30, "tabular", 0.02, 50)

    def record(i: int, run: str) -> Experience:
        words = " ".join(rng.sample(PHRASES, 3))
        return Experience(
            run=run,
            task=f"t{i % 20}",
            node=f"n{i:05d}",
            op=rng.choice(["draft", "improve", "debug"]),
            status="scored",
            outcome=rng.choice(["first", "gain", "no_gain", "failed"]),
            title=words[:60],
            plan=words,
            change=words[:80],
            recipe="lightgbm",
            move="",
            score=0.8,
            parent="",
            parent_score=None,
            gain_spreads=None,
            cost_ratio=None,
            exec_s=1.0,
            traits=traits,
        )

    # The shared store holds ``n_records`` of other runs; this run's own memory holds 300.
    shared = [record(i, f"r{i % 50}") for i in range(n_records)]
    own = [record(i, "this-run") for i in range(300)]
    embedder = load_embedder()
    setups = {"bm25": None} if embedder is None else {"bm25": None, "bm25+embeddings": embedder}
    for name, emb in setups.items():
        queries = QueryVectors(emb) if emb is not None else None
        memory = Memory(
            "this-run",
            "t0",
            traits,
            MemoryConfig(embeddings=emb is not None),
            shared=Retriever(MemoryStore(), emb, queries),
            local=Retriever(MemoryStore(), emb, queries),
        )
        started = time.perf_counter()
        for retriever, records in ((memory.shared, shared), (memory.local, own)):
            assert retriever is not None
            for batch_start in range(0, len(records), 256):  # embedded in batches, as fast as it goes
                batch = records[batch_start : batch_start + 256]
                vectors = emb.encode([e.text() for e in batch]) if emb is not None else [None] * len(batch)
                for exp, vector in zip(batch, vectors, strict=True):
                    retriever.store.add(exp, None if vector is None else vector.tobytes(), emb.model if emb else "")
        print(f"{name}: {n_records} + {len(own)} records stored in {time.perf_counter() - started:.1f} s")
        memory.recall("warm up")  # loads the embedding matrices once, as a run's first recall does
        recalls, firsts, shared_searches = [], [], []
        for rep in range(10):
            for query in QUERIES:
                query = f"{query} variant{rep}"  # a new query each time: its embedding is not cached
                started = time.perf_counter()
                memory.recall(query)
                recalls.append(time.perf_counter() - started)
                query = f"{query} again"  # one search alone, with a new query, in the large store
                started = time.perf_counter()
                memory.similar(query)
                firsts.append(time.perf_counter() - started)
                started = time.perf_counter()
                memory.similar(query)
                shared_searches.append(time.perf_counter() - started)
        print(
            f"{name}: one recall (3 searches: this run's successes and failures, then the shared store) "
            f"{_ms(recalls)}, that is {1000 * statistics.median(recalls) / 3:.2f} ms per search; "
            f"one search of the shared store with a new query {_ms(firsts)}, with a query already embedded {_ms(shared_searches)}"
        )
    if embedder is None:
        print("bm25+embeddings: not measured (install the [embeddings] extra)")


def _ms(times: list[float]) -> str:
    ordered = sorted(times)
    return f"median {1000 * statistics.median(ordered):.2f} ms (p90 {1000 * ordered[int(0.9 * len(ordered))]:.2f})"


def run_one(
    example_dir: Path, policy: str, seed: int, budget_s: float, work: Path, cpus: set[int] | None = None
) -> dict:
    """One cold run; its final test grade and its selection regret. ``cpus``: pin the run
    (and every script it starts) to these CPUs, with as many threads."""
    run_id = f"{example_dir.name}-{policy}-s{seed}"
    env = {**os.environ, "MLGUILD_HOME": str(work / "home"), "NO_COLOR": "1", "COLUMNS": "160"}
    cmd = [
        sys.executable, "-m", "mlguild.cli.app", "run", str(example_dir), "--time", f"{budget_s:g}s",
        "--brain", "recipes", "--seed", str(seed), "--set", f"search.policy={policy}", "--no-memory",
        "--runs-dir", str(work / "runs"), "--run-id", run_id,
    ]  # fmt: skip
    if cpus:
        cmd += ["--set", f"sandbox.threads={len(cpus)}"]
    started = time.monotonic()
    log = work / f"{run_id}.log"
    with log.open("w") as out:
        proc = subprocess.run(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=3 * budget_s + 600,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
        )  # fmt: skip
    row = {
        "example": example_dir.name, "policy": policy, "seed": seed, "budget_s": budget_s,
        "cpus": len(cpus) if cpus else os.cpu_count(), "wall_s": round(time.monotonic() - started, 1),
    }  # fmt: skip
    try:
        run = open_run(work / "runs" / run_id)
    except MlguildError as exc:
        return {**row, "error": f"exit {proc.returncode}: {exc}"}
    grade = json.loads((run.path / "audit" / "final_grade.json").read_text())
    state = replay(run.journal.records, get_metric(run.spec.metric).direction)
    scorers = scorers_for(run, state.scorer_fingerprint or "")
    assert scorers.grade is not None, "the examples keep test answers"
    best_key, nodes = None, 0
    for node in state.graph:
        if node.ok and node.op != "rerun":
            path = run.node_dir(node.id) / "output" / "submission.csv"
            try:
                key = scorers.grade.score(path).key()
            except MlguildError:
                continue
            nodes += 1
            best_key = key if best_key is None else max(best_key, key)
    sign = 1.0 if scorers.grade.metric.direction == "maximize" else -1.0
    chosen = grade["test_score"]
    regret = None if best_key is None or chosen is None else max(0.0, best_key - sign * chosen)
    run.close()
    return {**row, "metric": scorers.grade.metric.name, "test": chosen, "regret": regret, "nodes_graded": nodes}


def bench_compare(budget_s: float, seeds: int, examples: list[str], out: Path, side_by_side: bool) -> None:
    """Seed by seed over the examples, so that a partial table is balanced. Rows already in
    ``out`` for the same budget are kept and not run again: a stopped benchmark resumes."""
    work = Path(tempfile.mkdtemp(prefix="mlguild-compare-"))
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()] if out.exists() else []
    rows = [r for r in rows if r.get("budget_s") == budget_s and r["example"] in examples]
    done = {(r["example"], r["policy"], r["seed"]) for r in rows}
    available = sorted(os.sched_getaffinity(0))
    half = max(1, len(available) // 2)
    # Side by side: the two policies run at once, each pinned to its own half of the CPUs, so
    # both see the same machine load (a fairer pair than two runs one after the other).
    pins = {"greedy": set(available[:half]), "mcgs": set(available[half:] or available)} if side_by_side else {}
    example_dirs: dict[str, Path] = {}
    for seed in range(seeds):
        for name in examples:
            todo = [p for p in ("greedy", "mcgs") if (name, p, seed) not in done]
            if not todo:
                continue
            if name not in example_dirs:
                example_dirs[name] = build_example(name, work / "tasks" / name)
            with ThreadPoolExecutor(max_workers=2 if side_by_side else 1) as pool:
                jobs = [pool.submit(run_one, example_dirs[name], p, seed, budget_s, work, pins.get(p)) for p in todo]
                for job in jobs:
                    row = job.result()
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            out.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    print()
    print(f"| example | metric | greedy test (mean of {seeds}) | mcgs test | greedy regret | mcgs regret |")
    print("|---|---|---|---|---|---|")
    regrets: dict[str, list[float]] = {"greedy": [], "mcgs": []}
    for name in examples:
        cells = {}
        for policy in ("greedy", "mcgs"):
            mine = [r for r in rows if r["example"] == name and r["policy"] == policy and r.get("test") is not None]
            tests = [r["test"] for r in mine]
            regret = [r["regret"] for r in mine if r["regret"] is not None]
            regrets[policy] += regret
            cells[policy] = (
                f"{statistics.mean(tests):.5g}" if tests else "—",
                f"{statistics.mean(regret):.4g}" if regret else "—",
            )
        metric = next((r["metric"] for r in rows if r["example"] == name and "metric" in r), "?")
        print(
            f"| {name} | {metric} | {cells['greedy'][0]} | {cells['mcgs'][0]} | {cells['greedy'][1]} | {cells['mcgs'][1]} |"
        )
    for policy, values in regrets.items():
        if values:
            print(f"{policy}: mean selection regret {statistics.mean(values):.4g} over {len(values)} runs")
    print(f"rows: {out}; runs: {work}")


def _launch(
    example_dir: Path, run_id: str, budget_s: float, work: Path, home: Path, seed: int, cpus: set[int] | None
) -> Path:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "160", "MLGUILD_HOME": str(home)}
    cmd = [
        sys.executable, "-m", "mlguild.cli.app", "run", str(example_dir), "--time", f"{budget_s:g}s",
        "--brain", "recipes", "--seed", str(seed), "--runs-dir", str(work / "runs"), "--run-id", run_id,
    ]  # fmt: skip
    if cpus:
        cmd += ["--set", f"sandbox.threads={len(cpus)}"]
    with (work / f"{run_id}.log").open("w") as out:
        subprocess.run(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=3 * budget_s + 600,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
        )  # fmt: skip
    return work / "runs" / run_id


def _best_over_time(run_dir: Path) -> list[tuple[float, float]]:
    """(seconds into the run, holdout score) at each change of the best node."""
    run = open_run(run_dir)
    direction = get_metric(run.spec.metric).direction
    points = [
        (float(r["session_elapsed_s"]), float(r["score"])) for r in run.journal.records if r["type"] == "best_changed"
    ]
    run.close()
    return points if direction == "maximize" else [(t, -s) for t, s in points]  # larger is better


def _memory_citations(run_dir: Path) -> int:
    """How many of a run's nodes were proposed citing earlier runs (a family's draft order or a
    move's prior): 0 means the memory changed none of the recipe brain's choices."""
    run = open_run(run_dir)
    plans = [str(r["node"].get("plan", "")) for r in run.journal.records if r["type"] == "node_started"]
    run.close()
    return sum("in earlier runs" in plan for plan in plans)


def _merge_stores(sources: list[Path], target: Path) -> int:
    """Copy every record (and its embeddings) of the ``sources`` stores into ``target``."""
    into = MemoryStore(target)
    copied = 0
    for source in sources:
        store = MemoryStore(source)
        ids = store.ids()
        records = store.records(ids)
        vectors: dict[int, tuple[str, bytes]] = {}
        with sqlite3.connect(source) as db:
            models = [row[0] for row in db.execute("SELECT DISTINCT model FROM vectors")]
        for model in models:
            vectors.update({i: (model, blob) for i, blob in store.vectors(model)})
        for record_id in ids:
            model, blob = vectors.get(record_id, ("", None))
            into.add(records[record_id], blob, model)
            copied += 1
        store.close()
    into.close()
    return copied


# The data the bundled examples are built from, under other names in the gauntlet's list:
# a corpus run on one of them would be an earlier run on (nearly) the same task.
_EXAMPLE_DATA = {("modeldata", "wa_churn"), ("modeldata", "ames"), ("modeldata", "training_data")}


def corpus_entries(count: int) -> list:
    """The gauntlet's first data sets (in its list's rule-made order) with at least 500 rows and
    no variant, ``count // 3`` of each task type (the rest from the first types), leaving out
    the examples' own data (any titanic: the titanic example is the same passengers)."""
    import gauntlet_data

    usable = [
        e
        for e in gauntlet_data.load()
        if not e.variant
        and e.rows >= 500
        and (e.package, e.item) not in _EXAMPLE_DATA
        and "titanic" not in e.item.lower()
    ]
    types = ("binary", "regression", "multiclass")
    shares = {t: count // len(types) + (i < count % len(types)) for i, t in enumerate(types)}
    return [e for t in types for e in [e for e in usable if e.task_type == t][: shares[t]]]


def _store_transfer(store: Path, task_dir: Path) -> str:
    """The transfer a run of ``task_dir`` measures on ``store`` (see memory.priors)."""
    spec = load_task(task_dir).spec
    opened = MemoryStore(store)
    records = prior_records(opened, spec.task_type)
    opened.close()
    found = measure_transfer(records, spec.name, MemoryConfig().max_distance)
    return f"gain {found.gain:.2f}, run time {found.cost:.2f}, family rank {found.family:.2f} ({found.pairs} pairs)"


def bench_transfer(stores: list[Path]) -> None:
    """Per task type, the transfer measured on the records of ``stores`` together."""
    records = []
    for path in stores:
        opened = MemoryStore(path)
        records += [exp for _, exp in opened.recent(10**9)]
        opened.close()
    print("| task type | tasks | records | gain | run time | family rank | (task, move) pairs |")
    print("|---|---|---|---|---|---|---|")
    for task_type, (tasks, count, found) in transfer_by_type(records, MemoryConfig().max_distance).items():
        print(
            f"| {task_type} | {tasks} | {count} | {found.gain:.2f} | {found.cost:.2f} | {found.family:.2f} "
            f"| {found.pairs} |"
        )


# Targets (issue 30): a second run on the same task reaches the first run's final best in at
# most half its time (median over the pairs); a run warmed by other tasks is never slower
# than cold beyond the cold runs' seed spread.
SAME_TARGET = 0.5


def bench_warm(
    budget_s: float,
    examples: list[str],
    seeds: int,
    side_by_side: bool,
    sources: list[str],
    corpus: int = 18,
    corpus_budget_s: float = 120.0,
    corpus_from: Path | None = None,
) -> None:
    work = Path(tempfile.mkdtemp(prefix="mlguild-warm-"))
    print(f"load average at the start: {_load()}", flush=True)
    dirs = {name: build_example(name, work / "tasks" / name) for name in examples}
    free = [{cpu} for cpu in sorted(os.sched_getaffinity(0))] if side_by_side else [None]

    def launch(job: tuple[Path, str, Path, int, float]) -> Path:
        """Run one job (task folder, run id, MLGUILD_HOME, seed, budget) on a free CPU (or all)."""
        task_dir, run_id, home, seed, seconds = job
        cpus = free.pop()
        try:
            return _launch(task_dir, run_id, seconds, work, home, seed, cpus)
        finally:
            free.append(cpus)

    def run_jobs(jobs: list[tuple[Path, str, Path, int, float]]) -> list[Path]:
        with ThreadPoolExecutor(max_workers=len(free)) as pool:
            return list(pool.map(launch, jobs))

    corpus_stores: list[Path] = []
    if "corpus" in sources:
        entries = corpus_entries(corpus)
        homes = {e: (corpus_from or work) / f"corpus-{e.name.replace('~', '_')}" for e in entries}
        if corpus_from is None:
            import gauntlet

            tasks = {e: gauntlet.build_task(e, work / "corpus").root for e in entries}
            run_jobs([(tasks[e], home.name, home, 0, corpus_budget_s) for e, home in homes.items()])
        corpus_stores = [home / "memory.sqlite" for home in homes.values() if (home / "memory.sqlite").exists()]
        kinds = ", ".join(f"{e.name} ({e.task_type})" for e in entries)
        print(f"corpus: {len(corpus_stores)} of {len(entries)} runs left records: {kinds}", flush=True)

    # (example, seed) -> the best holdout score over time; per source too for the warm runs
    cold: dict[tuple[str, int], list[tuple[float, float]]] = {}
    warm: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    warmed_by: dict[tuple[str, str, int], tuple[int, int]] = {}  # records warming it, plans citing them
    for seed in range(seeds):
        # Cold runs, with the memory on and an empty store: their records warm the warm runs.
        cold_jobs = [(dirs[n], f"cold-{n}-s{seed}", work / f"cold-{n}-s{seed}", seed, budget_s) for n in dirs]
        for name, path in zip(dirs, run_jobs(cold_jobs), strict=True):
            cold[name, seed] = _best_over_time(path)
        for source in sources:
            homes, records = {}, {}
            for name in dirs:
                homes[name] = work / f"warm-{source}-{name}-s{seed}"
                homes[name].mkdir()
                if source == "corpus":
                    stores = corpus_stores
                else:
                    others = [other for other in dirs if other != name] if source == "others" else [name]
                    stores = [work / f"cold-{other}-s{seed}" / "memory.sqlite" for other in others]
                records[name] = _merge_stores(stores, homes[name] / "memory.sqlite")
                transfer = _store_transfer(homes[name] / "memory.sqlite", dirs[name])
                print(f"seed {seed}, from {source}: {name}'s store measures transfer: {transfer}", flush=True)
            jobs = [(dirs[n], f"warm-{source}-{n}-s{seed}", homes[n], seed, budget_s) for n in dirs]
            for name, path in zip(dirs, run_jobs(jobs), strict=True):
                warm[source, name, seed] = _best_over_time(path)
                warmed_by[source, name, seed] = (records[name], _memory_citations(path))
        print(f"seed {seed} done; load average {_load()}", flush=True)
    for source in sources:
        _warm_tables(source, list(dirs), seeds, cold, warm, warmed_by)
    print(f"load average at the end: {_load()}")
    print(f"runs: {work}")


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg()) + f" (1, 5, 15 min; {os.cpu_count()} CPUs)"


def _reached(points: list[tuple[float, float]], target: float) -> float:
    """When a run's best first reached ``target`` (larger is better); inf: never."""
    return next((t for t, score in points if score >= target), math.inf)


def _warm_tables(
    source: str,
    names: list[str],
    seeds: int,
    cold: dict[tuple[str, int], list[tuple[float, float]]],
    warm: dict[tuple[str, str, int], list[tuple[float, float]]],
    warmed_by: dict[tuple[str, str, int], tuple[int, int]],
) -> None:
    """Per pair (same example and seed): when the warm run reached the cold run's final best,
    against when the cold run did; and, for runs warmed by other tasks, whether any warm run
    was slower than cold beyond the cold runs' seed spread."""
    print(f"\n### warm --from {source}\n")
    print(
        "| example | seed | records warming it | warm plans citing them | cold final best (holdout) "
        "| cold reached it at | warm reached it at | warm / cold |"
    )
    print("|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {name: [] for name in names}
    for seed in range(seeds):
        for name in names:
            records, cited = warmed_by[source, name, seed]
            if not cold[name, seed]:
                print(f"| {name} | {seed} | {records} | {cited} | — | — | — | — |")
                continue
            cold_at, target = cold[name, seed][-1]
            reached = _reached(warm[source, name, seed], target)
            # A warm run that never reached the cold run's best counts as infinitely slow.
            ratio = reached / max(cold_at, 1e-9)
            ratios[name].append(ratio)
            shown = ("never", "—") if reached == math.inf else (f"{reached:.0f} s", f"{ratio:.2f}")
            print(
                f"| {name} | {seed} | {records} | {cited} | {abs(target):.5g} | {cold_at:.0f} s | {shown[0]} | {shown[1]} |"
            )
    every = [r for values in ratios.values() for r in values]
    if not every:
        return
    per_example = ", ".join(f"{n} {statistics.median(v):.2f}" for n, v in ratios.items() if v)
    median = statistics.median(every)
    print(
        f"\nmedian time ratio, warm over cold: {median:.2f} over {len(every)} pairs (per example: {per_example}; "
        f"{sum(r < math.inf for r in every)} reached the cold best; a run that never did counts as infinitely slow)"
    )
    if source == "same":
        verdict = "PASS" if median <= SAME_TARGET else "FAIL"
        print(
            f"{verdict}: a second run on the same task reaches the first run's final best in {median:.2f} of its time (median; target <= {SAME_TARGET})"
        )
    else:
        _spread_check(names, seeds, cold, {(n, s): warm[source, n, s] for n in names for s in range(seeds)})


def _spread_check(
    names: list[str],
    seeds: int,
    cold: dict[tuple[str, int], list[tuple[float, float]]],
    warm: dict[tuple[str, int], list[tuple[float, float]]],
) -> None:
    """Memory must not hurt: per example, the target is the worst of the cold runs' final
    bests (every cold run reached it); each warm run must reach it no later than the cold run
    of its seed did plus the cold runs' spread (the slowest minus the fastest of them)."""
    print(
        "\n| example | target (worst cold final best) | cold reached it at (per seed) | cold seed spread "
        "| warm reached it at (per seed) | slower than cold beyond the spread |"
    )
    print("|---|---|---|---|---|---|")
    failing = []
    for name in names:
        finals = [cold[name, s][-1][1] for s in range(seeds) if cold[name, s]]
        if len(finals) < seeds or seeds < 2:
            print(f"| {name} | — | — | — | — | not measured (needs a cold best on every seed, and 2 seeds or more) |")
            continue
        target = min(finals)
        cold_at = [_reached(cold[name, s], target) for s in range(seeds)]
        warm_at = [_reached(warm[name, s], target) for s in range(seeds)]
        spread = max(cold_at) - min(cold_at)
        slower = [s for s in range(seeds) if warm_at[s] > cold_at[s] + spread]
        failing += [f"{name} seed {s}" for s in slower]

        def shown(times: list[float]) -> str:
            return ", ".join("never" if t == math.inf else f"{t:.0f} s" for t in times)

        print(
            f"| {name} | {abs(target):.5g} | {shown(cold_at)} | {spread:.0f} s | {shown(warm_at)} "
            f"| {', '.join(f'seed {s}' for s in slower) or 'none'} |"
        )
    verdict = "FAIL" if failing else "PASS"
    print(f"{verdict}: a warm run slower than cold beyond the cold runs' seed spread: {', '.join(failing) or 'none'}")


def _sources(text: str) -> list[str]:
    sources = [part.strip() for part in text.split(",") if part.strip()]
    wrong = [part for part in sources if part not in ("others", "same", "corpus")]
    if wrong or not sources:
        sys.exit(f"--from {text!r}: each part must be others, same or corpus (e.g. --from same,others)")
    return list(dict.fromkeys(sources))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    sel = sub.add_parser("select", help="time one mcgs choice on a large graph")
    sel.add_argument("--nodes", type=int, default=10_000)
    ret = sub.add_parser("retrieve", help="time one memory retrieval from a large store")
    ret.add_argument("--records", type=int, default=10_000)
    cmp_ = sub.add_parser("compare", help="mcgs against greedy on the bundled examples: test score, selection regret")
    cmp_.add_argument("--budget", default="10m", help="time budget of each run (default 10m)")
    cmp_.add_argument("--seeds", type=int, default=3)
    cmp_.add_argument("--examples", default=",".join(EXAMPLES), help="comma-separated bundled examples")
    cmp_.add_argument("--out", type=Path, default=Path(".bench/search_compare.jsonl"))
    cmp_.add_argument(
        "--side-by-side", action="store_true", help="run the two policies at once, each on its own half of the CPUs"
    )
    warm = sub.add_parser("warm", help="cold runs against runs warmed by the other examples' memory")
    warm.add_argument("--budget", default="10m", help="time budget of each run (default 10m)")
    warm.add_argument("--examples", default=",".join(EXAMPLES), help="comma-separated bundled examples")
    warm.add_argument("--seeds", type=int, default=1, help="repeat cold and warm with seeds 0..N-1")
    warm.add_argument(
        "--side-by-side", action="store_true", help="run as many runs at once as there are CPUs, each on its own"
    )
    warm.add_argument(
        "--from",
        dest="source",
        default="others",
        help="what warms each example, comma-separated (each against the same cold runs): others (the other "
        "examples' cold records, the default), same (its own cold run's), corpus (cold runs on --corpus data "
        "sets of the gauntlet's list)",
    )
    warm.add_argument("--corpus", type=int, default=18, help="how many gauntlet data sets warm the examples")
    warm.add_argument("--corpus-budget", default="2m", help="time budget of each corpus run (default 2m)")
    warm.add_argument(
        "--corpus-from", type=Path, help="reuse the corpus runs of an earlier warm benchmark (its runs folder)"
    )
    transfer = sub.add_parser("transfer", help="how far the tasks in memory stores foretell each other's results")
    transfer.add_argument("stores", type=Path, nargs="+", help="memory.sqlite files (e.g. a warm benchmark's)")
    args = parser.parse_args()
    if args.what == "select":
        bench_select(args.nodes)
    elif args.what == "retrieve":
        bench_retrieve(args.records)
    elif args.what == "transfer":
        bench_transfer(args.stores)
    elif args.what == "warm":
        bench_warm(
            parse_duration(args.budget),
            args.examples.split(","),
            args.seeds,
            args.side_by_side,
            _sources(args.source),
            args.corpus,
            parse_duration(args.corpus_budget),
            args.corpus_from,
        )
    else:
        bench_compare(parse_duration(args.budget), args.seeds, args.examples.split(","), args.out, args.side_by_side)


if __name__ == "__main__":
    main()
