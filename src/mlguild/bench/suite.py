"""``mlguild bench``: the agent over a suite of tasks, each final submission graded once.

A suite is a list of tasks (a file with one per line, or a comma-separated list): task
folders, ``example:NAME``, ``mlebench:ID`` (under ``--data-dir``). Each task runs once per
seed as its own ``mlguild run`` process (a crash or a kill of one run never takes the others
with it), into ``OUT/runs/<task>-s<seed>``; a run already finished there is graded, not run
again, so a stopped bench resumes. Grading is ``mlguild.bench.grading``'s, after the run ended:
nothing of it reaches a search. Baselines (the sample submission) go through the same grading.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import TaskError
from ..core.vocabulary import Event
from ..task.folder import Task
from .grading import grade_submission, submission_of

RESULTS = "results.jsonl"
TABLE = "table.md"


@dataclass
class BenchOptions:
    time: str = "10m"
    seeds: int = 1
    run_args: list[str] = field(default_factory=list)  # more `mlguild run` options (--brain, --model, ...)
    leaderboards: Path | None = None  # MLE-bench's competitions folder: <ID>/leaderboard.csv
    baseline: bool = True  # grade each task's sample submission too


def read_suite(suite: str) -> list[str]:
    """The suite's entries: a file's non-empty lines (``#`` starts a comment), or a comma list."""
    path = Path(suite)
    if path.is_file():
        lines = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
        entries = [line for line in lines if line]
    else:
        entries = [part.strip() for part in suite.split(",") if part.strip()]
    if not entries:
        raise TaskError(f"the suite {suite!r} lists no tasks", "give a file with one task per line, or NAME,NAME")
    return entries


def resolve_entry(entry: str, data_dir: Path | None, resolve: Callable[[str], Task]) -> Task:
    """The task of a suite entry; ``resolve`` turns folders and sources into tasks."""
    if entry.startswith("mlebench:"):
        if data_dir is None:
            raise TaskError(f"{entry} needs MLE-bench's data folder", "pass --data-dir DIR")
        return resolve(str(data_dir / entry.split(":", 1)[1]))
    if ":" not in entry and not Path(entry).exists() and data_dir is not None and (data_dir / entry).exists():
        return resolve(str(data_dir / entry))  # a bare competition id, as in MLE-bench's split files
    return resolve(entry)


def _leaderboard(task: Task, entry: str, options: BenchOptions) -> Path | None:
    if options.leaderboards is None:
        return None
    competition = entry.split(":", 1)[1] if ":" in entry else Path(entry).name
    for name in (competition, task.spec.name):
        path = options.leaderboards / name / "leaderboard.csv"
        if path.is_file():
            return path
    return None


def _llm_cost(run_dir: Path) -> float:
    total = 0.0
    journal = run_dir / "journal.jsonl"
    if journal.exists():
        for line in journal.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a torn last line after a kill
            if record.get("type") == Event.LLM_CALL:
                total += float(record.get("cost_usd") or 0.0)
    return total


def run_one(task: Task, run_id: str, seed: int, out: Path, options: BenchOptions) -> tuple[float, int, str]:
    """Run the agent on ``task`` (unless that run finished before); (wall s, exit code, last error)."""
    run_dir = out / "runs" / run_id
    done = out / "done" / f"{run_id}.json"  # written when the run process ended
    if done.exists():
        info = json.loads(done.read_text())
        return info["wall_s"], info["exit"], info["error"]
    if run_dir.exists():  # a run the bench's own stop interrupted: start it again from nothing
        shutil.rmtree(run_dir)
    cmd = [
        sys.executable, "-m", "mlguild", "run", str(task.root), "--time", options.time, "--seed", str(seed),
        "--runs-dir", str(out / "runs"), "--run-id", run_id, *options.run_args,
    ]  # fmt: skip
    started = time.monotonic()
    log = out / "logs" / f"{run_id}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as sink:
        proc = subprocess.run(cmd, stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "NO_COLOR": "1"})
    wall = round(time.monotonic() - started, 1)
    errors = [line for line in log.read_text().splitlines() if line.startswith("error:")]
    info = {"wall_s": wall, "exit": proc.returncode, "error": errors[-1] if errors else ""}
    done.parent.mkdir(exist_ok=True)
    done.write_text(json.dumps(info))
    return wall, proc.returncode, info["error"]


def grade_row(task: Task, submission: Path, leaderboard: Path | None) -> dict:
    try:
        return grade_submission(task, submission, leaderboard)
    except TaskError as exc:  # no answers, a broken leaderboard: this row says so, the bench goes on
        return {"task": task.spec.name, "score": None, "valid_submission": False, "error": exc.message}


def run_bench(
    entries: list[str],
    out: Path,
    options: BenchOptions,
    resolve: Callable[[str], Task],
    data_dir: Path | None = None,
    say: Callable[[str], None] = print,
) -> list[dict]:
    """Every task of the suite, seed by seed; the rows, also in ``out/results.jsonl``."""
    out.mkdir(parents=True, exist_ok=True)
    tasks = [(entry, resolve_entry(entry, data_dir, resolve)) for entry in entries]  # all checked first
    rows: list[dict] = []
    for entry, task in tasks:
        if options.baseline:
            row = grade_row(task, task.sample_submission_path, _leaderboard(task, entry, options))
            rows.append({**row, "task": task.spec.name, "agent": "sample submission", "seed": None})
    for seed in range(options.seeds):
        for entry, task in tasks:
            run_id = f"{task.spec.name}-s{seed}"
            say(f"{run_id}: running ({options.time})")
            wall, code, error = run_one(task, run_id, seed, out, options)
            run_dir = out / "runs" / run_id
            try:
                submission = submission_of(run_dir)
            except TaskError:
                submission = run_dir / "final" / "submission.csv"  # graded as missing
            row = grade_row(task, submission, _leaderboard(task, entry, options))
            row.update(
                task=task.spec.name, agent="mlguild", seed=seed, time_s=wall, exit=code,
                run_error=error, llm_cost_usd=round(_llm_cost(run_dir), 4), run=str(run_dir),
            )  # fmt: skip
            rows.append(row)
            say(f"{run_id}: {_cell(row)}")
            (out / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / TABLE).write_text(table(rows))
    return rows


def _cell(row: dict) -> str:
    score = row.get("score")
    text = f"{score:.5g}" if score is not None else "invalid"
    if row.get("medal"):
        text += f" ({row['medal']})"
    return text


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error (0 for a single value)."""
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, se


def table(rows: list[dict]) -> str:
    """A Markdown table per task and agent, then the aggregate over seeds."""
    lines = [
        "| task | agent | seed | metric | score | medal | above median | win rate | valid | time (s) | LLM cost ($) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        medal = r.get("medal", "—") if "any_medal" in r else "—"
        above = ("yes" if r["above_median"] else "no") if "above_median" in r else "—"
        wins = f"{100 * r['win_rate']:.1f}%" if "win_rate" in r else "—"
        lines.append(
            f"| {r['task']} | {r['agent']} | {'' if r.get('seed') is None else r['seed']} | {r.get('metric', '')} "
            f"| {_cell(r) if r.get('score') is not None else 'invalid'} | {medal or 'none'} | {above} | {wins} "
            f"| {'yes' if r.get('valid_submission') else 'no'} | {r.get('time_s', '')} | {r.get('llm_cost_usd', '')} |"
        )
    lines.append("")
    for agent in dict.fromkeys(r["agent"] for r in rows):
        mine = [r for r in rows if r["agent"] == agent]
        seeds = sorted({r["seed"] for r in mine}, key=lambda s: -1 if s is None else s)
        shares: dict[str, list[float]] = {"any medal": [], "above median": [], "win rate": [], "valid": []}
        for seed in seeds:
            group = [r for r in mine if r["seed"] == seed]
            ranked = [r for r in group if "any_medal" in r]
            if ranked:
                shares["any medal"].append(100 * sum(r["any_medal"] for r in ranked) / len(ranked))
                shares["above median"].append(100 * sum(r["above_median"] for r in ranked) / len(ranked))
                rates = [r["win_rate"] for r in ranked if "win_rate" in r]  # results from before it was kept lack it
                if rates:
                    shares["win rate"].append(100 * statistics.fmean(rates))
            shares["valid"].append(100 * sum(bool(r.get("valid_submission")) for r in group) / len(group))
        parts = []
        for name, values in shares.items():
            if values:
                mean, se = mean_se(values)
                parts.append(f"{name} {mean:.1f}% ± {se:.1f}")
        lines.append(f"{agent}: {'; '.join(parts)} (over {len(seeds)} seed(s), {len(mine) // len(seeds)} task(s))")
        if len(seeds) > 1:
            for task in dict.fromkeys(r["task"] for r in mine):
                scores = [r["score"] for r in mine if r["task"] == task and r.get("score") is not None]
                if scores:
                    mean, se = mean_se(scores)
                    lines.append(f"  {task}: score {mean:.5g} ± {se:.2g} over {len(scores)} valid run(s)")
    return "\n".join(lines) + "\n"
