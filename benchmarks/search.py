"""Search benchmarks (issue 11). Run by hand, report the figures:

    .venv/bin/python benchmarks/search.py select [--nodes 10000]
    .venv/bin/python benchmarks/search.py retrieve [--records 10000]

``select``: the time one Monte Carlo graph search choice takes on a graph of ``--nodes``
nodes (target: <= 5 ms at 10,000). The graph is grown by the policy itself on a synthetic
task (each draft starts a branch of random quality, each improve moves its parent's score by
a little noise, one node in ten fails), so its shape is the shape the search makes. Two cases:
the live run (the policy saw the graph grow and takes in one new node per choice), and the
first choice after a resume (a new policy takes in the whole graph at once).

``retrieve``: the time one memory retrieval takes from a store of ``--records`` experience
records (target: <= 20 ms at 10,000), by BM25 alone and, when the [embeddings] extra is
installed, BM25 and sentence embeddings fused (the query's embedding included). The records
are made from a vocabulary of real plan and failure phrases, so the index has a realistic
spread of words.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from mlguild.config import BudgetConfig, SearchConfig
from mlguild.memory import MemoryStore, Retriever, TaskTraits
from mlguild.memory.embed import load_embedder
from mlguild.memory.experience import Experience
from mlguild.search import MCGSPolicy, Node, SearchGraph

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
    graph = SearchGraph("maximize")
    times = []
    while len(graph) < n_nodes:
        started = time.perf_counter()
        action = policy.select(graph, len(graph))
        times.append(time.perf_counter() - started)
        failed = rng.random() < 0.1
        if action.op == "improve":
            score = graph[action.parents[0]].score + rng.gauss(0.0005, 0.005)
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
    ops = {}
    for node in graph:
        ops[node.op] = ops.get(node.op, 0) + 1
    print(f"operations: {ops}")


def bench_retrieve(n_records: int) -> None:
    rng = random.Random(0)
    traits = TaskTraits("binary", "roc_auc", 10_000, 30, "tabular", 0.02, 50)
    embedder = load_embedder()
    retrievers = {"bm25": Retriever(MemoryStore())}
    if embedder is not None:
        retrievers["bm25+embeddings"] = Retriever(MemoryStore(), embedder)
    started = time.perf_counter()
    for i in range(n_records):
        words = " ".join(rng.sample(PHRASES, 3))
        exp = Experience(
            run=f"r{i % 50}",
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
        for retriever in retrievers.values():
            if retriever.embedder is None:
                retriever.add(exp)
    if embedder is not None:  # embed in batches: one store per configuration, the same records
        plain = retrievers["bm25"].store
        fused = retrievers["bm25+embeddings"]
        rows = plain.recent(n_records)[::-1]
        for start in range(0, len(rows), 256):
            batch = [e for _, e in rows[start : start + 256]]
            vectors = embedder.encode([e.text() for e in batch])
            for exp, vector in zip(batch, vectors, strict=True):
                fused.store.add(exp, vector.tobytes(), embedder.model)
    print(f"{n_records} records stored in {time.perf_counter() - started:.1f} s")
    for name, retriever in retrievers.items():
        retriever.search("warm up", 5)  # loads the embedding matrix once, as a run's first search does
        times = []
        for rep in range(10):
            for query in QUERIES:
                query = f"{query} variant{rep}"  # a new query each time: its embedding is not cached
                started = time.perf_counter()
                retriever.search(query, 8)  # as a recall does: successes, then failures
                retriever.search(query, 8, outcomes=("failed", "no_gain"))
                times.append((time.perf_counter() - started) / 2)
        times.sort()
        print(
            f"{name}: median {1000 * statistics.median(times):.2f} ms, p90 {1000 * times[int(0.9 * len(times))]:.2f} ms per search"
        )
    if embedder is None:
        print("bm25+embeddings: not measured (install the [embeddings] extra)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    sel = sub.add_parser("select", help="time one mcgs choice on a large graph")
    sel.add_argument("--nodes", type=int, default=10_000)
    ret = sub.add_parser("retrieve", help="time one memory retrieval from a large store")
    ret.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    if args.what == "select":
        bench_select(args.nodes)
    else:
        bench_retrieve(args.records)


if __name__ == "__main__":
    main()
