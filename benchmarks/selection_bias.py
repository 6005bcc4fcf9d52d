"""The winner's curse, measured (issue 26): is the confirmation split a closer estimate of
the test score than the holdout score of the node a run chooses? Run by hand, report the figures:

    .venv/bin/python benchmarks/selection_bias.py [--examples churn,ames,titanic,ridership] [--seeds 0,1,2] [--time 50]

For each bundled example (they keep their test answers sealed for grading) and each seed (the
holdout split's and the brain's), a recipe-brain run of ``--time`` seconds, with no final
refit so that the final submission is the chosen node's own. Per run: the chosen node's
holdout score, its confirmation score (scored once after the search) and its test score
(its submission graded on the sealed test answers). Reported: the mean absolute gap between
holdout and test, and between confirmation and test (the confirmation split must be the
closer estimate), the mean selection bias (holdout minus confirmation, positive when the
holdout flattered the choice), and the audit's cost: its seconds and their share of the budget.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from mlguild.config import load_config
from mlguild.launch import Finished, start
from mlguild.rundir.journal import read_journal
from mlguild.scoring.scorer import Scorer
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task


def one_run(example: Path, seed: int, time_s: float, runs: Path) -> dict | None:
    sets = [
        "brain.name=recipes",
        f"brain.seed={seed}",
        f"firewall.seed={seed}",
        f"budget.time_s={time_s}",
        "final.refit=false",
        "sandbox.kind=local",
        "memory.enabled=false",
    ]
    started = time.monotonic()
    done = start(example, load_config(None, sets), runs_dir=runs)
    wall = time.monotonic() - started
    assert isinstance(done, Finished)
    choice = done.finish.choice or {}
    shown = choice.get("confirmation") or {}
    if shown.get("confirm_score") is None:
        return None
    task = load_task(example)
    answers = task.answers_path
    assert answers is not None
    base = shown["node"]
    test = Scorer.from_file(task.spec, answers, max_bytes=None).score(
        done.run.node_dir(base) / "output" / "submission.csv"
    )
    audit = next(r for r in read_journal(done.run.path / "journal.jsonl") if r["type"] == "confirmation_scored")
    direction = 1.0 if test.direction == "maximize" else -1.0
    return {
        "example": example.name,
        "seed": seed,
        "nodes": done.searched,
        "node": base,
        "holdout": shown["holdout_score"],
        "confirm": shown["confirm_score"],
        "test": test.value,
        "confirm_rows": shown.get("confirm_rows"),
        "bias": shown["selection_bias"],
        "holdout_minus_test": direction * (shown["holdout_score"] - test.value),
        "confirm_minus_test": direction * (shown["confirm_score"] - test.value),
        "audit_s": audit["seconds"],
        "wall_s": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", default="churn,ames,titanic,ridership")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--time", type=float, default=50.0, help="seconds of search per run")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in args.examples.split(","):
            example = build_example(name, root / "examples" / name)
            for seed in (int(s) for s in args.seeds.split(",")):
                row = one_run(example, seed, args.time, root / "runs")
                if row is None:
                    print(f"{name} seed {seed}: no confirmation score (task too small?)")
                    continue
                rows.append(row)
                print(json.dumps(row))
    if not rows:
        return
    for name in dict.fromkeys(r["example"] for r in rows):  # per example: one metric each
        mine = [r for r in rows if r["example"] == name]
        gaps = [statistics.fmean(abs(r[k]) for r in mine) for k in ("holdout_minus_test", "confirm_minus_test")]
        rows_c = mine[0]["confirm_rows"]
        print(
            f"{name} ({rows_c} confirmation rows): mean |holdout - test| {gaps[0]:.4g}, mean |confirmation - test| {gaps[1]:.4g}"
        )
    mean = lambda key: statistics.fmean(abs(r[key]) for r in rows)
    print(f"\nruns: {len(rows)}; nodes per run: {statistics.fmean(r['nodes'] for r in rows):.1f}")
    print(f"mean |holdout - test|      : {mean('holdout_minus_test'):.4g}")
    print(f"mean |confirmation - test| : {mean('confirm_minus_test'):.4g}")
    print(f"mean selection bias (holdout - confirmation, oriented): {statistics.fmean(r['bias'] for r in rows):+.4g}")
    print(f"mean holdout - test (oriented): {statistics.fmean(r['holdout_minus_test'] for r in rows):+.4g}")
    print(f"mean confirmation - test (oriented): {statistics.fmean(r['confirm_minus_test'] for r in rows):+.4g}")
    closer = sum(abs(r["confirm_minus_test"]) < abs(r["holdout_minus_test"]) for r in rows)
    print(f"confirmation closer to test in {closer} of {len(rows)} runs")
    audit = statistics.fmean(r["audit_s"] for r in rows)
    print(f"audit cost: {audit:.2f} s per run, {audit / args.time:.2%} of the {args.time:g} s budget")


if __name__ == "__main__":
    main()
