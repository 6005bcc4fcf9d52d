"""Prompt size as the graph grows (issue: LLM brain). Run by hand, report the figures:

    .venv/bin/python benchmarks/prompt_size.py [--iterations 200]

Drives the real loop with the LLM brain over the packaged scripted LLM (which answers every
prompt with a complete prior-predictor script), on the bundled churn task, and records the
prompt tokens of every call (estimated as characters / 4). Context isolation keeps them
bounded: target <= 8k tokens at iteration 200. For contrast it prints what a design that
pastes every previous node's plan and code into the prompt would send at the same iteration.
It also prints the tokens per request and the share of all prompt tokens that lie in the run's
stable prefix (the system turn the requests share byte for byte, the most common one): what a
provider's prompt cache can serve instead of billing again. A second figure follows automatic
prefix caching as OpenAI documents it: a request's longest prefix that an earlier request sent,
counted when it is at least 1,024 tokens, in steps of 128 tokens (the time a cache keeps a prefix
is left out). ``--review`` turns the code review on (its requests are counted like the others).
``--exploration`` answers the exploration's request with a script that prints what a real one
does (the columns, their types, a describe() table, missing shares), about 6,000 characters,
instead of the prior predictor's few lines: what reaches the brief, and every later request's
prefix, is then the harness's digest of it (the scripted LLM writes no summary).
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
# What an exploration prints on the churn task: the kind of output a model's EDA script writes.
EXPLORATION = """Plan: print the data's shape, column types, summary statistics and missing shares.
```python
import os
import pandas as pd
train = pd.read_csv(os.path.join(os.environ["MLGUILD_DATA"], "train.csv"))
test = pd.read_csv(os.path.join(os.environ["MLGUILD_DATA"], "test.csv"))
print("train shape:", train.shape, "test shape:", test.shape)
print(train.dtypes.to_string())
print(train.describe(include="all").T.to_string())
print("missing share per column:")
print(train.isna().mean().round(3).to_string())
for column in train.columns:
    print(f"{column}: {train[column].nunique()} distinct values")
```
"""
MIN_CACHED_TOKENS, CACHE_STEP_TOKENS = 1024, 128  # automatic prefix caching (OpenAI's rule)


def _text(call: dict) -> str:
    """A request as the provider reads it: its turns in order (roles included, so that a
    system turn and a user turn of the same text do not count as one prefix)."""
    return "".join(f"<{m.role}>{m.content}" for m in call["messages"])


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def prefix_cached_chars(calls: list[dict]) -> int:
    """The characters of ``calls`` an automatic prefix cache could serve: for each request,
    the longest prefix an earlier request sent, from 1,024 tokens on, in 128-token steps."""
    texts = [_text(c) for c in calls]
    cached = 0
    for i, text in enumerate(texts):
        longest = max((_common(text, earlier) for earlier in texts[:i]), default=0) // CHARS_PER_TOKEN
        if longest >= MIN_CACHED_TOKENS:
            cached += (longest - longest % CACHE_STEP_TOKENS) * CHARS_PER_TOKEN
    return cached


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--review", action="store_true", help="the LLM reviews its scripts (brain.review)")
    parser.add_argument("--exploration", action="store_true", help="an exploration that prints a real EDA's output")
    args = parser.parse_args()
    reply = f"Plan: a prior predictor.\n```python\n{PRIOR_SCRIPT.format(shrink=0.2)}```\n"
    eda_job = "Before any model is trained, explore the data"
    answer = lambda messages: EXPLORATION if args.exploration and eda_job in messages[-1].content else reply
    llm = ScriptedLLM(default=answer)
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
        automatic = prefix_cached_chars(llm.calls)
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
    print(
        f"automatic prefix caching (a prefix an earlier request sent, >= {MIN_CACHED_TOKENS:,} tokens): "
        f"{100 * automatic / max(all_chars, 1):.0f}% of all prompt tokens; billed in full "
        f"{(all_chars - automatic) // CHARS_PER_TOKEN:,}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
