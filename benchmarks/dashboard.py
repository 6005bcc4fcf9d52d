"""Dashboard and report benchmarks (issue 27). Run by hand, report the figures:

    .venv/bin/python benchmarks/dashboard.py [--nodes 1000] [--appends 5]

It makes a real run (`mlguild run example:churn --dry-run`), grows its journal to ``--nodes``
nodes with the journal's own record functions (a random search graph: improves, debugs,
fuses with several parents, failures of every common class, four workers, new bests, LLM
calls), serves it with the real dashboard, and drives Debian's headless chromium:

- first render: from navigation to every node of the graph drawn (target <= 1 s);
- live append: from a node_started record written to the node drawn (target <= 2 s);
- report: `write_report` of the run, plots included (target <= 5 s).

Figures are printed; nothing is asserted (tests never time anything).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from mlguild.core.graph import Node
from mlguild.rundir.journal import Journal
from mlguild.rundir.records import Outcome, record_finished, record_started

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
FAILURES = ["crash", "timeout", "memory", "invalid_output", "syntax_error"]


def make_big_run(runs: Path, nodes: int, seed: int = 0) -> Path:
    """A real dry run of churn, then its journal grown to ``nodes`` nodes."""
    subprocess.run(
        [sys.executable, "-m", "mlguild", "run", "example:churn", "--dry-run", "-n", "1"]
        + ["--sandbox", "local", "--runs-dir", str(runs), "--run-id", "big"],
        check=True,
        capture_output=True,
        cwd=runs.parent,
    )
    run = runs / "big"
    rng = random.Random(seed)
    best = 0.6
    scored: list[str] = []
    code = (run / "nodes" / "n0001" / "solution.py").read_text()
    with Journal(run / "journal.jsonl") as journal:
        existing = sum(1 for r in journal if r["type"] == "node_started")
        for k in range(existing + 1, nodes + 1):
            node_id = f"n{k:04d}"
            if not scored or rng.random() < 0.08:
                op, parents = "draft", ()
            elif rng.random() < 0.06 and len(scored) > 3:
                op, parents = "fuse", tuple(rng.sample(scored, 3))
            else:
                op, parents = rng.choice(["improve", "improve", "debug", "evolve"]), (rng.choice(scored),)
            node = Node(id=node_id, op=op, parents=parents, iteration=k - 1, plan=f"## {op.title()}: step {k}\n")
            node.title = f"{op.title()}: step {k} of a long search"
            folder = run / "nodes" / node_id
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "plan.md").write_text(node.plan)
            (folder / "solution.py").write_text(code.replace("SHRINK = 0.5", f"SHRINK = {rng.random():.3f}"))
            record_started(journal, node, "benchmark", worker=1 + k % 4)
            if rng.random() < 0.15:
                outcome = Outcome(
                    rng.choice(FAILURES), failure="Traceback\nValueError: benchmark", timing={"exec_s": 1.0}
                )
            else:
                score = min(0.99, max(0.5, best + rng.gauss(-0.01, 0.01)))
                outcome = Outcome("scored", score=score, timing={"exec_s": rng.uniform(1, 60)})
                scored.append(node_id)
            record_finished(journal, node, outcome)
            if outcome.score is not None and outcome.score > best:
                best = outcome.score
                journal.append("best_changed", id=node_id, score=best)
            if op != "draft" and rng.random() < 0.5:
                journal.append(
                    "llm_call",
                    model="openai/gpt-4.1",
                    purpose=op,
                    node=node_id,
                    outcome="ok",
                    input_tokens=3000,
                    output_tokens=800,
                    cost_usd=0.01,
                )
    return run


def serve(runs: Path):
    import socket

    import uvicorn

    from mlguild.view.server import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(runs), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--appends", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from mlguild.view.report import write_report

    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        runs.mkdir()
        started = time.perf_counter()
        run = make_big_run(runs, args.nodes)
        total = sum(1 for line in (run / "journal.jsonl").open() if '"node_started"' in line)
        print(f"run of {total} nodes made in {time.perf_counter() - started:.1f} s ({run / 'journal.jsonl'})")

        started = time.perf_counter()
        write_report(run)
        print(f"report of {total} nodes (html + md, plots): {time.perf_counter() - started:.2f} s   (target <= 5 s)")

        server, url = serve(runs)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                renders = []
                for _ in range(3):  # the first is cold: the server parses the journal
                    page.goto("about:blank")
                    page.goto(f"{url}/#/run/big")
                    page.wait_for_function(
                        f"document.querySelectorAll('#graph g.node').length >= {total}", timeout=60000
                    )
                    renders.append(page.evaluate("performance.now()") / 1000)
                print(
                    f"first render of {total} nodes: {renders[0]:.2f} s cold, {min(renders[1:]):.2f} s warm   (target <= 1 s)"
                )
                latencies = []
                with Journal(run / "journal.jsonl") as journal:
                    for k in range(args.appends):
                        node_id = f"n{total + k + 1:04d}"
                        node = Node(id=node_id, op="improve", parents=("n0001",), iteration=total + k, title="live")
                        t0 = time.perf_counter()
                        record_started(journal, node, "benchmark", worker=1)
                        page.wait_for_selector(f"#graph g.node[data-id='{node_id}']", state="attached", timeout=30000)
                        latencies.append(time.perf_counter() - t0)
                print(
                    f"journal append visible in the browser: median {statistics.median(latencies):.2f} s, "
                    f"max {max(latencies):.2f} s over {len(latencies)} appends   (target <= 2 s)"
                )
                browser.close()
        finally:
            server.should_exit = True


if __name__ == "__main__":
    main()
