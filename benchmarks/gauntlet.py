"""The gauntlet: the recipe brain on a long list of real data sets it has never seen.

What it measures, per data set of ``benchmarks/gauntlet_datasets.csv`` (chosen by the written
rule in ``gauntlet_data.py``, not by hand; variants included):

* whether ``mlguild run TASK --time BUDGET --brain recipes`` ends with a valid final
  submission (``final/submission.csv``, graded valid once on the sealed test answers);
* its test score against the **constant floor**: the better of the task's sample
  submission and the training prior (majority class, class shares, mean or median), both
  scored by mlguild's scorer on the same answers;
* every failure along the way, by class: a node's exception (from its failure text, with
  the step and column a recipe script names) and any crash of mlguild itself;
* wall time.

A run that ends with a one-line error (exit code 2, ``error: ...``) is counted separately as
"nothing learnable / refused" and listed with its message: that is the product saying
clearly why it cannot work on the data, not a crash.

Commands (mlguild's venv; one run at a time, so a 2-core machine gives each run its cores)::

    .venv/bin/python benchmarks/gauntlet.py select                # rewrite the list by the rule
    .venv/bin/python benchmarks/gauntlet.py run                   # every task, 30 s each, live progress bar
    .venv/bin/python benchmarks/gauntlet.py run --background      # the same, detached; prints where it logs
    .venv/bin/python benchmarks/gauntlet.py status                # progress bar of a (background) run
    .venv/bin/python benchmarks/gauntlet.py report                # the table of the latest run
    .venv/bin/python benchmarks/gauntlet.py run --limit 10 --budget 15s --only 'MASS-*'
    .venv/bin/python benchmarks/gauntlet.py run --metric mae --out .bench/gauntlet-mae

How long: about budget + 10 s per task (start, firewall, final refit, grade): ~2 hours for
the 192 tasks at 30 s. A run resumes where it stopped when started again with the same
``--out`` (finished tasks are kept). Results: ``<out>/results.jsonl`` (one record per task),
``<out>/report.md`` (the table), ``<out>/logs/``.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gauntlet_data
from gauntlet_data import Entry
from vs_automl import log_tail, mlguild_command, run_logged, score_file

from mlguild.coder.diagnose import diagnose
from mlguild.config import parse_duration
from mlguild.core.errors import MlguildError
from mlguild.metrics import Score, get_metric
from mlguild.sources.csv_source import build_from_csv
from mlguild.task.folder import Task, load_task

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / ".bench" / "gauntlet"


# ----------------------------------------------------------------- tasks


def build_task(entry: Entry, work: Path) -> Task:
    """The entry's data (variant applied) as a task folder, built the way a user builds one:
    the data written to a CSV, then ``mlguild init csv:`` (here its library call)."""
    frame = gauntlet_data.load_frame(entry.package, entry.item)
    if entry.variant:
        frame = gauntlet_data.make_variant(frame, entry.target, entry.variant)
    csv = work / "data" / f"{entry.name}.csv"
    csv.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(csv, index=False)
    dest = work / "tasks" / entry.name
    build_from_csv(
        csv,
        dest,
        target=entry.target,
        task_type=entry.task_type,
        metric=entry.metric,
        name=entry.name.replace("~", "_"),
        overwrite=True,
    )
    return load_task(dest)


def constant_floor(task: Task, work: Path) -> dict:
    """The better test score of the sample submission and of the training prior."""
    spec = task.spec
    sample = pd.read_csv(task.sample_submission_path, dtype=str, keep_default_na=False)
    train = pd.read_csv(task.train_path, dtype=str, keep_default_na=False)
    target = train[spec.target_columns[0]]
    kind = get_metric(spec.metric).prediction
    prior = sample.copy()
    if kind == "label":
        prior[spec.prediction_columns[0]] = target.mode().iloc[0]
    elif kind == "probability":
        prior[spec.prediction_columns[0]] = float((target == (spec.positive_label or "1")).mean())
    elif kind == "class_probabilities":
        shares = target.value_counts(normalize=True)
        for column, label in zip(spec.prediction_columns, spec.classes or []):
            prior[column] = float(shares.get(label, 0.0))
    else:
        values = pd.to_numeric(target, errors="coerce").dropna()
        prior[spec.prediction_columns[0]] = float(values.median() if spec.metric == "mae" else values.mean())
    path = work / "prior_submission.csv"
    prior.to_csv(path, index=False)
    scores = [
        s
        for s in (score_file(task, task.sample_submission_path)["score"], score_file(task, path)["score"])
        if s is not None
    ]
    direction = get_metric(spec.metric).direction
    best = max(scores, key=lambda s: Score(s, direction).key()) if scores else None
    return {"floor": best, "direction": direction}


# ----------------------------------------------------------------- one task


def run_one(entry: Entry, budget_s: float, out: Path, extra: list[str] = ()) -> dict:
    """Build, run and judge one task; never raises (a problem is the record's finding)."""
    work = out / "work" / entry.name
    record: dict = {"name": entry.name, "metric": entry.metric, "task_type": entry.task_type, "variant": entry.variant}
    started = time.monotonic()
    try:
        task = build_task(entry, work)
    except MlguildError as exc:
        return {**record, "outcome": "build_refused", "message": exc.message, "wall_s": 0.0, "crashes": {}}
    except Exception as exc:
        return {
            **record,
            "outcome": "build_crash",
            "message": f"{type(exc).__name__}: {exc}",
            "wall_s": 0.0,
            "crashes": {f"init:{type(exc).__name__}": 1},
        }
    record.update(constant_floor(task, work))
    runs, log = work / "runs", out / "logs" / f"{entry.name}.log"
    env = {**os.environ, "MLGUILD_HOME": str(work / "home"), "NO_COLOR": "1", "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
    cmd = [
        *mlguild_command(),
        "run",
        str(task.root),
        "--time",
        f"{budget_s:g}s",
        "--brain",
        "recipes",
        "--runs-dir",
        str(runs),
        "--run-id",
        "run",
        "--no-memory",  # each task on its own: nothing learned on the others
        *extra,
    ]
    proc = run_logged(cmd, log, timeout_s=3 * budget_s + 180, env=env, cwd=work)
    record["wall_s"] = round(time.monotonic() - started, 1)
    record.update(_judge(proc, log, runs / "run", task))
    return record


def _judge(proc: dict, log: Path, run_dir: Path, task: Task) -> dict:
    text = log.read_text(errors="replace") if log.exists() else ""
    crashes = _node_failures(run_dir)
    if "Traceback (most recent call last)" in text:  # mlguild itself crashed
        cause = diagnose(text)
        crashes[f"mlguild:{cause.exception or 'crash'}"] += 1
    nodes = _count_nodes(run_dir)
    if proc["timed_out"]:
        return {"outcome": "timeout", "message": f"killed{log_tail(log)}", "crashes": dict(crashes), **nodes}
    errors = [line[len("error: ") :] for line in text.splitlines() if line.startswith("error: ")]
    final = run_dir / "final" / "submission.csv"
    if not final.exists():
        if proc["rc"] == 2 and errors and not run_dir.exists():  # refused before any run: the task itself
            return {"outcome": "refused", "message": errors[-1], "crashes": dict(crashes), **nodes}
        why = errors[-1] if errors else f"exit code {proc['rc']}{log_tail(log)}"
        return {"outcome": "no_submission", "message": why, "crashes": dict(crashes), **nodes}
    graded = score_file(task, final)
    if graded["score"] is None:
        return {"outcome": "invalid_submission", "message": graded["error"], "crashes": dict(crashes), **nodes}
    if errors and errors[-1].startswith("nothing learnable"):
        return {
            "outcome": "nothing_learnable",
            "message": errors[-1],
            "test_score": graded["score"],
            "crashes": dict(crashes),
            **nodes,
        }
    return {"outcome": "valid", "test_score": graded["score"], "crashes": dict(crashes), **nodes}


def _journal(run_dir: Path) -> list[dict]:
    path = run_dir / "journal.jsonl"
    if not path.exists():
        return []
    records = []
    for line in path.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            records.append(json.loads(line))
    return records


def _node_failures(run_dir: Path) -> Counter:
    """Failed nodes by class: "<status>:<exception>@<step>" (step when the script named it)."""
    out: Counter = Counter()
    for rec in _journal(run_dir):
        if rec.get("type") == "node_finished" and rec.get("status") not in ("scored", "final"):
            cause = diagnose(rec.get("failure") or "")
            step = f"@{cause.step}" if cause.step else ""
            out[f"{rec['status']}:{cause.exception or '-'}{step}"] += 1
    return out


def _count_nodes(run_dir: Path) -> dict:
    finished = [r for r in _journal(run_dir) if r.get("type") == "node_finished"]
    return {"nodes": len(finished), "scored": sum(r.get("status") == "scored" for r in finished)}


# ----------------------------------------------------------------- the whole run


def _done(results: Path) -> dict[str, dict]:
    if not results.exists():
        return {}
    records = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    return {r["name"]: r for r in records}


def run_all(entries: list[Entry], budget_s: float, out: Path, extra: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    done = _done(results)
    todo = [e for e in entries if e.name not in done]
    (out / "progress.json").write_text(
        json.dumps(
            {"total": len(entries), "budget_s": budget_s, "started": time.time(), "names": [e.name for e in entries]}
        )
    )
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, disable=not sys.stdout.isatty()) as bar:
        task_bar = bar.add_task("gauntlet", total=len(entries), completed=len(entries) - len(todo))
        for entry in todo:
            bar.update(task_bar, description=f"{entry.name[:40]:40s}")
            record = run_one(entry, budget_s, out, extra)
            with results.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            bar.advance(task_bar)
            if not sys.stdout.isatty():
                print(f"{len(_done(results))}/{len(entries)} {entry.name}: {_verdict(record)}", flush=True)
    report = make_report(out)
    (out / "report.md").write_text(report)
    print(report)


def _verdict(record: dict) -> str:
    if record["outcome"] != "valid":
        return f"{record['outcome']} ({record.get('message', '')[:150]})"
    return f"valid, test {record['test_score']:.5g} vs floor {_show(record.get('floor'))}" + (
        "" if _beats(record) else "  (not above the floor)"
    )


def _beats(record: dict) -> bool:
    if record.get("test_score") is None or record.get("floor") is None:
        return False
    return Score(record["test_score"], record["direction"]).better_than(Score(record["floor"], record["direction"]))


def _show(value) -> str:
    return "—" if value is None else f"{value:.5g}"


def make_report(out: Path) -> str:
    records = list(_done(out / "results.jsonl").values())
    total = len(records)
    refused = [r for r in records if r["outcome"] in ("refused", "build_refused", "nothing_learnable")]
    judged = [r for r in records if r not in refused]
    valid = [r for r in judged if r["outcome"] == "valid"]
    beats = [r for r in valid if _beats(r)]
    crashes: Counter = Counter()
    for r in records:
        crashes.update(r.get("crashes") or {})
    pct = lambda part, whole: f"{100 * len(part) / len(whole):.1f}%" if whole else "—"
    lines = [
        "# Gauntlet results",
        "",
        f"- tasks: {total} ({sum(1 for r in records if r['variant'])} variants)",
        f"- valid final submission: {len(valid)}/{len(judged)} ({pct(valid, judged)}) of the tasks not refused",
        f"- better than the constant floor on test: {len(beats)}/{len(judged)} ({pct(beats, judged)})",
        f"- ended with a one-line error instead (nothing learnable, or a task mlguild refuses): {len(refused)}",
        f"- median wall time: {np.median([r['wall_s'] for r in records]) if records else 0:.0f} s",
        "",
    ]
    if refused:
        lines += (
            ["## Nothing learnable, or refused", ""]
            + [f"- {r['name']} ({r['outcome']}): {r.get('message', '')}" for r in refused]
            + [""]
        )
    failed = [r for r in judged if r["outcome"] != "valid"]
    if failed:
        lines += (
            ["## No valid submission", ""]
            + [f"- {r['name']}: {r['outcome']}: {r.get('message', '')[:300]}" for r in failed]
            + [""]
        )
    below = [r for r in valid if not _beats(r)]
    if below:
        lines += (
            ["## Valid but not above the floor", ""]
            + [
                f"- {r['name']} ({r['metric']}): test {_show(r['test_score'])}, floor {_show(r['floor'])}"
                for r in below
            ]
            + [""]
        )
    lines += ["## Node failures by class", "", "| class | nodes |", "|---|---|"]
    lines += [f"| {name} | {count} |" for name, count in crashes.most_common()] or ["| none | 0 |"]
    lines += [
        "",
        "## Every task",
        "",
        "| task | metric | outcome | test | floor | nodes (scored) | s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(records, key=lambda r: r["name"]):
        lines.append(
            f"| {r['name']} | {r['metric']} | {r['outcome']} | {_show(r.get('test_score'))} | "
            f"{_show(r.get('floor'))} | {r.get('nodes', 0)} ({r.get('scored', 0)}) | {r.get('wall_s', 0):.0f} |"
        )
    return "\n".join(lines) + "\n"


def show_status(out: Path) -> None:
    """A progress bar of a run (it may be running in the background)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    progress = json.loads((out / "progress.json").read_text()) if (out / "progress.json").exists() else None
    if progress is None:
        sys.exit(f"no gauntlet run in {out}; start one with `benchmarks/gauntlet.py run --background`")
    records = _done(out / "results.jsonl")
    valid = sum(r["outcome"] == "valid" for r in records.values())
    with Progress(TextColumn("gauntlet"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}")) as bar:
        bar.add_task(
            f"{valid} valid, {sum(_beats(r) for r in records.values())} above the floor",
            total=progress["total"],
            completed=len(records),
        )
    pending = [n for n in progress["names"] if n not in records]
    if pending:
        print(f"next: {pending[0]}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    select = sub.add_parser("select", help="rewrite the list of data sets by the rule")
    select.add_argument("--count", type=int, default=160, help="data sets before variants (default 160)")
    run = sub.add_parser("run", help="run the gauntlet")
    run.add_argument("--budget", default="30s", help="mlguild --time per task (default 30s)")
    run.add_argument("--limit", type=int, help="only the first N tasks of the list")
    run.add_argument("--only", help="only tasks whose name matches this glob, e.g. 'MASS-*' or '*~messy'")
    run.add_argument("--metric", help="only tasks scored by this metric, e.g. mae")
    run.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results folder (default {DEFAULT_OUT})")
    run.add_argument("--background", action="store_true", help="detach; follow it with `status`")
    run.add_argument("--set", action="append", default=[], help="extra mlguild --set overrides")
    for name in ("status", "report"):
        sub.add_parser(name).add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    if args.command == "select":
        entries = gauntlet_data.select(args.count)
        gauntlet_data.save(entries)
        print(f"{len(entries)} tasks written to {gauntlet_data.LIST_FILE}")
    elif args.command == "run":
        if args.background:
            args.out.mkdir(parents=True, exist_ok=True)
            forwarded = [a for a in (argv or sys.argv[1:]) if a != "--background"]
            with open(args.out / "gauntlet.log", "ab") as log:
                subprocess.Popen(
                    [sys.executable, __file__, *forwarded],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            print(
                f"running in the background; log {args.out / 'gauntlet.log'}; "
                f"progress: {sys.executable} {__file__} status --out {args.out}"
            )
            return
        entries = gauntlet_data.load()
        if args.only:
            entries = [e for e in entries if fnmatch.fnmatch(e.name, args.only)]
        if args.metric:
            entries = [e for e in entries if e.metric == args.metric]
        entries = entries[: args.limit] if args.limit else entries
        extra = [x for item in args.set for x in ("--set", item)]
        run_all(entries, parse_duration(args.budget), args.out, extra)
    elif args.command == "status":
        show_status(args.out)
    else:
        print(make_report(args.out))


if __name__ == "__main__":
    main()
