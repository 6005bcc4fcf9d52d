"""Search benchmarks (issue 11). Run by hand, report the figures:

    .venv/bin/python benchmarks/search.py select [--nodes 10000]

``select``: the time one Monte Carlo graph search choice takes on a graph of ``--nodes``
nodes (target: <= 5 ms at 10,000). The graph is grown by the policy itself on a synthetic
task (each draft starts a branch of random quality, each improve moves its parent's score by
a little noise, one node in ten fails), so its shape is the shape the search makes. Two cases:
the live run (the policy saw the graph grow and takes in one new node per choice), and the
first choice after a resume (a new policy takes in the whole graph at once).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from mlguild.config import BudgetConfig, SearchConfig
from mlguild.search import MCGSPolicy, Node, SearchGraph


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    sel = sub.add_parser("select", help="time one mcgs choice on a large graph")
    sel.add_argument("--nodes", type=int, default=10_000)
    args = parser.parse_args()
    if args.what == "select":
        bench_select(args.nodes)


if __name__ == "__main__":
    main()
