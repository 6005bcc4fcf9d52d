"""`mlguild bench`: the agent over a suite of tasks, graded as MLE-bench grades."""

from __future__ import annotations

from pathlib import Path

import typer

from ..config import MIN_RUN_S, parse_duration
from .common import console, plain, user_errors


def bench(
    suite: str = typer.Argument(
        ..., help="A file with one task per line (folder, example:NAME, mlebench:ID), or NAME,NAME,..."
    ),
    time: str = typer.Option("10m", "--time", "-t", help="Budget of each run."),
    seeds: int = typer.Option(1, "--seeds", min=1, help="Runs per task, seeds 0..N-1."),
    out: Path = typer.Option(Path("bench"), "--out", "-o", help="Where runs, results.jsonl and table.md go."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="MLE-bench's data folder, for mlebench:ID entries."),
    leaderboards: Path | None = typer.Option(
        None, help="MLE-bench's competitions folder (ID/leaderboard.csv in it), for medals."
    ),
    brain: str | None = typer.Option(None, help="Passed to each `mlguild run`."),
    model: list[str] = typer.Option([], "--model", "-m", help="Passed to each `mlguild run` (repeatable)."),
    set_: list[str] = typer.Option([], "--set", help="Passed to each `mlguild run` (repeatable)."),
    memory: bool = typer.Option(
        False, "--memory/--no-memory", help="Let runs share the memory store (off: each run starts clean)."
    ),
    baseline: bool = typer.Option(True, "--baseline/--no-baseline", help="Grade each sample submission too."),
) -> None:
    """Run the agent on every task of SUITE, SEEDS times, grade each final submission once, and
    write the table (score, medal, above median, win rate, valid, time, LLM cost) and the aggregate."""
    from ..bench.suite import BenchOptions, read_suite, run_bench
    from .task_cmd import resolve_task

    with user_errors():
        parse_duration(time, "--time", MIN_RUN_S)  # refused here, not once per task
        args = [*(["--brain", brain] if brain else []), *[a for m in model for a in ("--model", m)]]
        args += [a for s in set_ for a in ("--set", s)]
        if not memory:
            args.append("--no-memory")
        options = BenchOptions(time, seeds, args, leaderboards, baseline)
        rows = run_bench(
            read_suite(suite), out, options, resolve_task, data_dir, say=lambda line: console.print(plain(line))
        )
    from ..bench.suite import table

    for line in table(rows).splitlines():
        console.print(plain(line))
    console.print(plain(f"rows: {out / 'results.jsonl'}; table: {out / 'table.md'}"))
