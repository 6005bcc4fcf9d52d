"""Prompt size as the graph grows (issue: LLM brain). Run by hand, report the figures:

    .venv/bin/python benchmarks/prompt_size.py [--iterations 200]

Drives the real loop with the LLM brain over the packaged scripted LLM (which answers every
prompt with a complete prior-predictor script), on the bundled churn task, and records the
prompt tokens of every call (estimated as characters / 4). Context isolation keeps them
bounded: target <= 8k tokens at iteration 200. For contrast it prints what a design that
pastes every previous node's plan and code into the prompt would send at the same iteration.
It also prints the share of all prompt tokens that lie in the system turn every request shares
word for word: what a provider's prompt cache can serve instead of billing again.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from mlguild.brains.llm.brain import LLMBrain
from mlguild.brains.scripted import PRIOR_SCRIPT
from mlguild.config import load_config
from mlguild.llm import ScriptedLLM
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task

CHARS_PER_TOKEN = 4


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200)
    args = parser.parse_args()
    reply = f"Plan: a prior predictor.\n```python\n{PRIOR_SCRIPT.format(shrink=0.2)}```\n"
    llm = ScriptedLLM(default=reply)
    with tempfile.TemporaryDirectory() as tmp:
        task = load_task(build_example("churn", Path(tmp) / "churn"))
        cfg = load_config(None, [f"budget.iterations={args.iterations}", "search.draft_every=10"])
        run = create_run(task, cfg, Path(tmp) / "runs")
        agent = Agent(open_session(run, LLMBrain(llm)))
        agent.run_loop()
        per_node: dict[str, int] = {}
        systems = {c["messages"][0].content for c in llm.calls}
        shared_chars = sum(len(m.content) for c in llm.calls for m in c["messages"] if m.role == "system")
        all_chars = sum(len(m.content) for c in llm.calls for m in c["messages"])
        for call in llm.calls:
            tokens = sum(len(m.content) for m in call["messages"]) // CHARS_PER_TOKEN
            per_node[call["node"]] = max(per_node.get(call["node"], 0), tokens)
        code_chars = [
            len((run.node_dir(n.id) / "solution.py").read_text()) + len(n.plan) for n in agent.session.state.graph
        ]
        run.close()
    nodes = sorted(per_node)
    print("iteration  largest prompt (tokens)  paste-everything design (tokens)")
    for i in (1, 10, 50, 100, 150, 200):
        if i <= len(nodes):
            naive = (per_node[nodes[0]] * CHARS_PER_TOKEN + sum(code_chars[: i - 1])) // CHARS_PER_TOKEN
            print(f"{i:>9}  {per_node[nodes[i - 1]]:>23,}  {naive:>32,}")
    worst = max(per_node.values())
    print(
        f"largest prompt over {len(nodes)} iterations: {worst:,} tokens (target <= 8,000) -> "
        f"{'OK' if worst <= 8000 else 'MISSED'}"
    )
    print(
        f"shared system turn: {len(systems)} distinct text(s), {100 * shared_chars / max(all_chars, 1):.0f}% of "
        f"all prompt tokens over {len(llm.calls)} requests (servable by a provider's prompt cache)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
