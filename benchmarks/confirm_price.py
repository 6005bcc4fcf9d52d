"""What the confirmation split costs in final test score (issue 38): the same recipe-brain run
with the split (the default, ``firewall.confirm_fraction=0.1``, raised to the holdout's size
off time order) and without it (``0``), seed by seed, the final stage on. Run by hand, report
the figures:

    .venv/bin/python benchmarks/confirm_price.py [--examples churn,ames,titanic] [--seeds 0,1] [--time 300]

The split takes labelled rows from the search (it trains on about 60% of them instead of 80%)
and the final refit gives them back; what it buys is an unbiased estimate of the chosen node's
score and a second opinion when the final choice is within noise. Per run: the final
submission's test score (its once-per-run grade on the example's sealed test answers), the
node graded, whether it was refitted, the nodes searched. Reported per example: the mean test
score with and without, and the paired difference seed by seed (oriented: positive when the
split costs score).
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
from mlguild.metrics import get_metric
from mlguild.sources.examples import build_example


def one_run(example: Path, seed: int, time_s: float, confirm: bool, runs: Path) -> dict:
    sets = [
        "brain.name=recipes",
        f"brain.seed={seed}",
        f"firewall.seed={seed}",
        f"budget.time_s={time_s}",
        f"firewall.confirm_fraction={0.1 if confirm else 0.0}",
        "memory.enabled=false",
    ]
    started = time.monotonic()
    done = start(example, load_config(None, sets), runs_dir=runs)
    wall = time.monotonic() - started
    assert isinstance(done, Finished)
    grade = json.loads((done.run.path / "audit" / "final_grade.json").read_text())
    return {
        "example": example.name,
        "seed": seed,
        "confirm": confirm,
        "test": grade["test_score"],
        "direction": get_metric(grade["metric"]).direction,
        "node": grade.get("node"),
        "refit": grade.get("refit"),
        "nodes": done.searched,
        "wall_s": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", default="churn,ames,titanic")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--time", type=float, default=300.0, help="seconds per run (search and final stage)")
    parser.add_argument("--out", type=Path, help="write the rows as JSON here, after every run")
    args = parser.parse_args()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in args.examples.split(","):
            example = build_example(name, root / "examples" / name)
            for seed in (int(s) for s in args.seeds.split(",")):
                for confirm in (True, False):  # paired: the same seed with and without
                    rows.append(one_run(example, seed, args.time, confirm, root / "runs"))
                    print(json.dumps(rows[-1]), flush=True)
                    if args.out:
                        args.out.write_text(json.dumps(rows, indent=1))
    for name in dict.fromkeys(r["example"] for r in rows):
        mine = [r for r in rows if r["example"] == name]
        sign = -1.0 if mine[0]["direction"] == "minimize" else 1.0
        on = {r["seed"]: r["test"] for r in mine if r["confirm"]}
        off = {r["seed"]: r["test"] for r in mine if not r["confirm"]}
        paired = [sign * (off[s] - on[s]) for s in on if s in off]
        print(
            f"{name}: test with the split {statistics.fmean(on.values()):.4f}, without {statistics.fmean(off.values()):.4f}; "
            f"cost per seed (oriented, positive = the split costs) {[round(p, 4) for p in paired]}, "
            f"mean {statistics.fmean(paired):+.4f}"
        )


if __name__ == "__main__":
    main()
