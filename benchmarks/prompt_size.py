"""Prompt size as the graph grows (issue: LLM brain). Run by hand, report the figures:

    .venv/bin/python benchmarks/prompt_size.py [--iterations 200]

Drives the real loop with the LLM brain over the packaged scripted LLM (which answers every
prompt with a complete prior-predictor script), on the bundled churn task, and records the
prompt tokens of every call (estimated as characters / 4). Context isolation keeps them
bounded: target <= 8k tokens at iteration 200. For contrast it prints what a design that
pastes every previous node's plan and code into the prompt would send at the same iteration.
It also prints the tokens per request and the share of all prompt tokens that lie in the run's
stable prefix (the system turn the requests share byte for byte, the most common one): what a
provider's prompt cache can serve instead of billing again. ``--review`` turns the code review
on (its requests are counted like the others).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
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
    parser.add_argument("--review", action="store_true", help="the LLM reviews its scripts (brain.review)")
    args = parser.parse_args()
    reply = f"Plan: a prior predictor.\n```python\n{PRIOR_SCRIPT.format(shrink=0.2)}```\n"
    llm = ScriptedLLM(default=reply)
    with tempfile.TemporaryDirectory() as tmp:
        task = load_task(build_example("churn", Path(tmp) / "churn"))
        cfg = load_config(None, [f"budget.iterations={args.iterations}", "search.draft_every=10"])
        run = create_run(task, cfg, Path(tmp) / "runs")
        agent = Agent(open_session(run, LLMBrain(llm, LLMBrainOptions(review=args.review))))
        agent.run_loop()
        per_node: dict[str, int] = {}
        systems = Counter(c["messages"][0].content for c in llm.calls if c["messages"][0].role == "system")
        prefix = systems.most_common(1)[0][0] if systems else ""
        shared_chars = sum(len(prefix) for c in llm.calls if c["messages"][0].content == prefix)
        all_chars = sum(len(m.content) for c in llm.calls for m in c["messages"])
        per_request = [sum(len(m.content) for m in c["messages"]) // CHARS_PER_TOKEN for c in llm.calls]
        purposes = Counter(str(c["purpose"]).split(":")[0] for c in llm.calls)
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
        f"tokens per request: mean {statistics.fmean(per_request):,.0f}, median {statistics.median(per_request):,.0f} "
        f"over {len(llm.calls)} requests ({', '.join(f'{p} {n}' for p, n in purposes.most_common())})"
    )
    print(
        f"stable prefix: {len(systems)} distinct system text(s); the most common, {len(prefix) // CHARS_PER_TOKEN:,} "
        f"tokens, is {100 * shared_chars / max(all_chars, 1):.0f}% of all prompt tokens "
        f"(servable by a provider's prompt cache)"
    )
    print(
        f"all prompt tokens: {all_chars // CHARS_PER_TOKEN:,}; outside the stable prefix (billed in full): "
        f"{(all_chars - shared_chars) // CHARS_PER_TOKEN:,}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
