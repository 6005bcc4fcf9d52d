"""mlguild's recipe brain against off-the-shelf AutoML (FLAML, AutoGluon), same budget, same scorer.

What it measures: for each bundled example (churn, ames, reviews, titanic, ridership, digits,
the colour image files of photos, the several-target schools and devroles, the rankings
fishing, movies, crackers and catsup, and flights with its lookup tables), the test score of

* mlguild: ``mlguild run TASK --time BUDGET --brain recipes`` in a fresh runs directory and a
  fresh $MLGUILD_HOME; its score is the once-per-run grade of its final submission on the
  sealed test answers (``<run>/audit/final_grade.json``). Its search keeps part of the
  labelled rows as a sealed holdout; its final stage refits the best pipeline on all labelled
  rows when there is time (``refit`` in the results says whether the graded file is a refit).
* each AutoML peer, run by ``benchmarks/peers/run_<peer>.py`` with the peer's own venv: fit on
  ALL labelled rows with the same wall-clock budget (FLAML ``time_budget``; AutoGluon
  ``time_limit`` with ``presets="medium_quality"`` as the peer ``autogluon``, and with
  ``presets="best_quality"``, which bags and stacks, as the peer ``autogluon_best``, from the
  same venv), the task metric or the closest one the peer has, all cores, nothing else tuned;
  then predict the test rows in the task's
  submission format. Tasks with several targets, which FLAML and AutoGluon do not fit as they
  come, get a plain LightGBM default per column instead (``run_lightgbm_columns.py``, in
  mlguild's venv); a peer that does not apply to a task shows ``n/a``. The raw train frame goes in as pandas reads it (id column dropped);
  text columns stay raw strings and each peer does with them what it does by default (see
  the docstrings of the runners); image arrays are already one numeric column per pixel.
  On photos, whose rows are image files, the tabular peers have nothing to read: they show
  ``n/a`` and mlguild's score stands against the task's floor.
  On ridership (ordered in time: its test days come after all its labelled days) the date
  column goes in as its text, and each peer validates as it does by default (randomly),
  while mlguild's holdout is its latest labelled days and its recipes' folds are ordered in time.

* on a task with lookup tables (flights), plain LightGBM with its defaults on the train file
  alone, as a user who does not join the tables would fit it (``run_lightgbm.py``); the AutoML
  peers read that file alone too. mlguild's recipes join the tables.

* on rankings, which FLAML and AutoGluon do not serve (they are skipped there, and say so),
  plain LightGBM with its defaults (``benchmarks/peers/run_lightgbm.py``, mlguild's own venv):
  LambdaRank for a grouped ranking, grouped by the task's group column (or the repeating id),
  its scores beside each row's id and keys, or each group's rows written best first for a
  ranked file (no score column); a classifier's top-k classes for a single label scored by
  MAP@k; a list-valued target has no plain baseline (its floor, the most listed items, is one).

Every submission, mlguild's included (re-scored as a cross-check of the audit record), is
scored by mlguild's own scorer (``mlguild.scoring.scorer.Scorer``) against the same test
answers (``<task>/private/answers.csv``). The constant sample submission's score (the floor)
is shown too. The table's ratio is > 1 when mlguild is better: mlguild/peer for metrics that
are maximised, peer/mlguild for metrics that are minimised. Against the best peer of each
task, the table adds mlguild's normalised score (0 = the floor, 1 = that peer) and a verdict
from paired bootstrap resamples of the test rows (200, scored by the same scorer): ahead or
behind when one system is better on at least 95% of them, a tie otherwise; the last lines
count the verdicts and average the normalised scores (``summary`` in the JSON). Wall seconds are measured around
each subprocess (imports, data loading and prediction included); every system gets a hard
timeout of 2 x budget + 60 s, and one that fails or times out is reported as such, with the
reason. The JSON results (default .bench/results/) add, per system, its log, the model the
peer chose, and for mlguild its node counts, holdout score and whether the graded file is a refit.

Install the peers (benchmark-only, never part of mlguild's install; each in its own venv
under .bench/, which git ignores; ~2.6 GB and 2-3 minutes with a wheel cache)::

    benchmarks/peers/setup.sh                 # or: .venv/bin/python benchmarks/vs_automl.py --setup

Run (with mlguild's venv; everything runs one process at a time)::

    .venv/bin/python benchmarks/vs_automl.py                            # all tasks, 5 min each
    .venv/bin/python benchmarks/vs_automl.py --budget 30s --tasks churn,ames --out results.json
    .venv/bin/python benchmarks/vs_automl.py --skip-mlguild --peers flaml --budget 20s

A long comparison can be run in parts: the peers first (``--skip-mlguild --workdir W``), then
mlguild with ``--reuse`` naming the first part's JSON, same ``--workdir``: a system whose
result there is ok, at the same budget, with its submission still on disk, is taken from it
(``reused_from``) instead of run again; the verdicts are computed on the saved submissions.

How long: each task takes about (1 + number of peers) x budget plus ~10-30 s of start-up,
so the default (5 tasks, 3 systems, 5 min) takes about 80 minutes; ``--budget 30s`` on all
tasks about 10 minutes. A peer that is not installed is skipped with the command that
installs it. Use a quiet machine: the systems share its cores, one after another.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlguild.config import parse_duration
from mlguild.core.errors import SubmissionError
from mlguild.scoring.scorer import Scorer
from mlguild.sources.examples import EXAMPLES, build_example
from mlguild.task.folder import Task, load_task
from mlguild.util.exact_csv import read_csv_exact

ROOT = Path(__file__).resolve().parents[1]
PEERS_DIR = ROOT / "benchmarks" / "peers"
PEERS = {  # name -> (runner script, module whose __version__ says it is installed)
    "flaml": ("run_flaml.py", "flaml"),
    "autogluon": ("run_autogluon.py", "autogluon.tabular"),
    # AutoGluon at its best: bagged and stacked (presets="best_quality"), from the same venv.
    "autogluon_best": ("run_autogluon.py", "autogluon.tabular"),
    # The shapes the AutoML peers do not serve as they come: plain LightGBM, run with mlguild's
    # own venv: LambdaRank or top-k classes for a ranking (benchmarks/peers/run_lightgbm.py), a
    # default per column for several targets (run_lightgbm_columns.py); see runner_for.
    "lightgbm": ("run_lightgbm.py", "lightgbm"),
}
OWN_VENV = {"lightgbm"}  # peers that run with this interpreter, not a venv under .bench/
PEER_VENV = {"autogluon_best": "autogluon"}  # a peer that shares another's venv under .bench/
PEER_ARGS = {"autogluon_best": ["--presets", "best_quality"]}  # its runner's arguments beyond the common ones
# mlguild is "ahead" of (or "behind") a peer on a task when it scores better (worse) on at least
# this share of paired bootstrap resamples of the test rows; a "tie" otherwise.
BEYOND_NOISE = 0.95
RATIO_NOTE = "ratio > 1 means mlguild is better: mlguild/peer when the metric is maximised, peer/mlguild when minimised"


# ----------------------------------------------------------------- processes


def run_logged(cmd: list[str], log: Path, timeout_s: float, env: dict | None = None, cwd: Path | None = None) -> dict:
    """Run ``cmd`` in its own process group, output to ``log``; kill the whole group on timeout."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "wb") as out:
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            out.write(f"cannot start {cmd[0]}: {exc}\n".encode())
            return {"rc": None, "timed_out": False, "wall_s": 0.0}
        try:
            rc = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 30)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
            rc = proc.returncode
    return {"rc": rc, "timed_out": timed_out, "wall_s": round(time.monotonic() - start, 1)}


def log_tail(log: Path, lines: int = 3, width: int = 400) -> str:
    """The last lines of a log, prefixed with '; ' (empty when there is nothing to show)."""
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    kept = [ln.strip() for ln in text if ln.strip()][-lines:]
    return "; " + " | ".join(kept)[-width:] if kept else ""


def peer_python(bench_dir: Path, peer: str) -> Path:
    return Path(sys.executable) if peer in OWN_VENV else bench_dir / PEER_VENV.get(peer, peer) / "bin" / "python"


def peer_applies(peer: str, spec) -> bool:
    """Whether the peer fits a task's shape: FLAML and AutoGluon fit one target column; plain
    LightGBM fits several too (a default per column)."""
    return peer in OWN_VENV or len(spec.target_columns) == 1


def runner_for(peer: str, spec) -> str:
    """The runner script of ``peer`` for this task's shape."""
    if peer in OWN_VENV and len(spec.target_columns) > 1:
        return "run_lightgbm_columns.py"
    return PEERS[peer][0]


def peer_serves(peer: str, task: Task) -> str | None:
    """Why ``peer`` is not run on ``task`` (None when it is): the AutoML peers have no ranking
    task; plain LightGBM is there for rankings and several targets only (on one target the
    AutoML peers run LightGBM themselves)."""
    ranking = task.spec.task_type == "ranking" or task.spec.metric == "map_at_k"
    if task.spec.file_column is not None:
        return f"{peer} reads tables; this task's rows are image files (file_column)"
    several = len(task.spec.target_columns) > 1
    if ranking and peer not in OWN_VENV:
        return f"{peer} has no ranking task (grouped scores or ranked lists)"
    if not (ranking or several or task.spec.tables) and peer in OWN_VENV:
        return "plain LightGBM is the peer of rankings, several targets and tasks with lookup tables only"
    if peer in OWN_VENV and task.spec.task_type == "ranking" and task.spec.metric == "map_at_k":
        return "a list-valued target has no plain LightGBM baseline (a model needs candidates to rank)"
    return None


def peer_available(bench_dir: Path, peer: str) -> tuple[str | None, str]:
    """(version, "") when the peer's venv imports it, else (None, why and how to fix)."""
    python = peer_python(bench_dir, peer)
    fix = f"install it with `benchmarks/peers/setup.sh {PEER_VENV.get(peer, peer)}`"
    if not python.exists():
        return None, f"not installed ({python} is missing); {fix}"
    module = PEERS[peer][1]
    try:
        out = subprocess.run(
            [str(python), "-c", f"import {module} as m; print(m.__version__)"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return None, f"importing {module} took over 300 s"
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"{python} cannot import {module} ({last}); {fix}"
    return out.stdout.strip(), ""


# ----------------------------------------------------------------- scoring


def score_file(task: Task, path: Path) -> dict:
    """Score a submission with mlguild's scorer against the task's test answers (a label the
    training rows have is a known label, as in a run's own grade)."""
    spec = task.spec
    train = read_csv_exact(task.train_path)
    labels = set(train[spec.target_columns[0]]) if spec.task_type in ("binary", "multiclass") else set()
    try:
        score = Scorer.from_file(spec, task.answers_path, labels=labels).score(path)
    except SubmissionError as exc:
        return {"score": None, "error": f"invalid submission ({exc.reason}): {exc.message}"}
    except (ValueError, OSError) as exc:
        return {"score": None, "error": f"cannot be scored: {exc}"}
    return {"score": score.value, "error": None}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ratio(direction: str, ours: float | None, peer: float | None) -> float | None:
    """> 1 when mlguild is better; None when either is missing or not positive (no meaningful ratio)."""
    if ours is None or peer is None or ours <= 0 or peer <= 0:
        return None
    return ours / peer if direction == "maximize" else peer / ours


# ----------------------------------------------------------------- the systems


def mlguild_command() -> list[str]:
    exe = Path(sys.executable).parent / "mlguild"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mlguild.cli.app"]


def run_mlguild(task: Task, name: str, budget_s: float, work: Path, timeout_s: float) -> dict:
    home, runs = work / "mlguild_home" / name, work / "runs"
    home.mkdir(parents=True, exist_ok=True)
    run_id = f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    log = work / "logs" / f"mlguild-{name}.log"
    env = {**os.environ, "MLGUILD_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "160", "PYTHONUNBUFFERED": "1"}
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
        run_id,
        "--no-memory",  # a cold run: nothing learned on the other examples
    ]
    proc = run_logged(cmd, log, timeout_s, env=env, cwd=work)
    out = {"wall_s": proc["wall_s"], "log": str(log), "run_dir": str(runs / run_id)}
    stopped = re.search(r"stopped: (.*?); (\d+) nodes, (\d+) scored", log.read_text(errors="replace"))
    if stopped:
        out.update(stop_reason=stopped.group(1), nodes=int(stopped.group(2)), scored=int(stopped.group(3)))
    audit = runs / run_id / "audit" / "final_grade.json"
    if proc["timed_out"]:
        return {**out, "status": "timeout", "score": None, "reason": f"killed after {timeout_s:g} s{log_tail(log)}"}
    if not audit.exists():
        why = f"exit code {proc['rc']}, no audit/final_grade.json"
        return {**out, "status": "failed", "score": None, "reason": f"{why}{log_tail(log)}"}
    grade = json.loads(audit.read_text())
    out.update(
        holdout_score=grade.get("holdout_score"),
        graded_node=grade.get("node"),
        best_node=grade.get("best_node", grade.get("node")),
        refit=grade.get("refit"),
    )
    if grade.get("test_score") is None:
        return {**out, "status": "failed", "score": None, "reason": f"final grade invalid: {grade.get('error')}"}
    # Cross-check: the graded file (final/ when mlguild's final stage ran, else best/) scored again
    # by the same scorer must give the audit's number.
    run_dir = runs / run_id
    graded = next(
        (
            p
            for p in (run_dir / "final" / "submission.csv", run_dir / "best" / "submission.csv")
            if p.exists() and sha256(p) == grade.get("submission_sha256")
        ),
        None,
    )
    check = score_file(task, graded) if graded else {"score": None, "error": "no submission with the audited sha256"}
    out["rescored"] = check["score"]
    out["submission"] = str(graded) if graded else None
    if check["score"] is None or abs(check["score"] - grade["test_score"]) > 1e-9:
        out["rescore_note"] = f"re-scoring the graded submission gave {check['score']} ({check['error'] or 'differs'})"
    return {**out, "status": "ok", "score": grade["test_score"], "reason": None}


def run_peer(
    peer: str,
    task: Task,
    spec_json: Path,
    name: str,
    budget_s: float,
    work: Path,
    timeout_s: float,
    bench_dir: Path,
    threads: int,
) -> dict:
    out_dir = work / "peers" / name / peer
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    submission, info_path = out_dir / "submission.csv", out_dir / "info.json"
    log = work / "logs" / f"{peer}-{name}.log"
    cmd = [
        str(peer_python(bench_dir, peer)),
        str(PEERS_DIR / runner_for(peer, task.spec)),
        "--spec",
        str(spec_json),
        "--train",
        str(task.train_path),
        "--test",
        str(task.test_path),
        "--budget",
        f"{budget_s:g}",
        "--threads",
        str(threads),
        "--out",
        str(submission),
        "--workdir",
        str(out_dir / "work"),
        "--info",
        str(info_path),
        *PEER_ARGS.get(peer, []),
    ]
    proc = run_logged(cmd, log, timeout_s, env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=out_dir)
    out = {"wall_s": proc["wall_s"], "log": str(log), "submission": str(submission)}
    if info_path.exists():
        info = json.loads(info_path.read_text())
        out["info"] = {k: info[k] for k in ("version", "metric", "best_estimator", "best_model", "fit_s") if k in info}
    if proc["timed_out"]:
        return {**out, "status": "timeout", "score": None, "reason": f"killed after {timeout_s:g} s{log_tail(log)}"}
    if proc["rc"] != 0 or not submission.exists():
        return {**out, "status": "failed", "score": None, "reason": f"exit code {proc['rc']}{log_tail(log)}"}
    scored = score_file(task, submission)
    if scored["score"] is None:
        return {**out, "status": "failed", "score": None, "reason": scored["error"]}
    shutil.rmtree(out_dir / "work", ignore_errors=True)  # AutoGluon's saved models: hundreds of MB
    return {**out, "status": "ok", "score": scored["score"], "reason": None}


def reusable(path: Path, budget_s: float) -> dict[tuple[str, str], dict]:
    """(task, system) -> result, for the ok results of an earlier run at ``budget_s`` whose
    submissions still exist, each marked with the file it came from."""
    earlier = json.loads(path.read_text())
    if earlier.get("budget_s") != budget_s:
        sys.exit(f"--reuse {path}: its budget is {earlier.get('budget_s')} s, not {budget_s:g} s")
    found = {}
    for row in earlier.get("tasks", []):
        for system, result in row.get("results", {}).items():
            if result.get("status") == "ok" and result.get("submission") and Path(result["submission"]).exists():
                found[(row["task"], system)] = {**result, "reused_from": str(path)}
    return found


def against_best_peer(task: Task, row: dict) -> dict | None:
    """mlguild against the best peer that scored on this task: which one, mlguild's normalised
    score (0 = the constant floor, 1 = that peer; above 1 beyond it), and the verdict of paired
    bootstrap resamples of the test rows (``BEYOND_NOISE``): "ahead", "behind" or "tie". None
    when mlguild or every peer has no score."""
    ours = row["results"].get("mlguild") or {}
    scored = {s: r for s, r in row["results"].items() if s != "mlguild" and r.get("score") is not None}
    if ours.get("score") is None or not scored:
        return None
    sign = 1.0 if row["direction"] == "maximize" else -1.0
    peer, best = max(scored.items(), key=lambda item: sign * item[1]["score"])
    floor = row.get("floor")
    gap = None if floor is None else best["score"] - floor
    normalised = None if not gap else (ours["score"] - floor) / gap
    out = {"peer": peer, "peer_score": best["score"], "normalised": normalised, "verdict": None}
    if ours.get("submission") and best.get("submission"):
        spec = task.spec
        train = read_csv_exact(task.train_path)
        labels = set(train[spec.target_columns[0]]) if spec.task_type in ("binary", "multiclass") else set()
        scorer = Scorer.from_file(spec, task.answers_path, labels=labels)
        try:
            won = scorer.bootstrap_wins(ours["submission"], best["submission"])
            lost = scorer.bootstrap_wins(best["submission"], ours["submission"])
        except (SubmissionError, ValueError, OSError) as exc:
            return {**out, "verdict_error": str(exc)}
        out.update(wins=won, losses=lost)
        if won is not None and lost is not None:
            out["verdict"] = "ahead" if won >= BEYOND_NOISE else "behind" if lost >= BEYOND_NOISE else "tie"
    return out


def summary(rows: list[dict]) -> dict:
    """Over the tasks with a comparison: how often mlguild is ahead of, tied with and behind
    the best peer, and its mean normalised score."""
    compared = [row["vs_best_peer"] for row in rows if row.get("vs_best_peer")]
    verdicts = [c["verdict"] for c in compared]
    normalised = [c["normalised"] for c in compared if c["normalised"] is not None]
    return {
        "tasks": len(compared),
        **{v: verdicts.count(v) for v in ("ahead", "tie", "behind")},
        "mean_normalised": sum(normalised) / len(normalised) if normalised else None,
    }


# ----------------------------------------------------------------- report


def fmt_score(r: dict | None) -> str:
    if not r:
        return "—"
    return f"{r['score']:.4f}" if r.get("score") is not None else r["status"]


def table(rows: list[dict], systems: list[str], peers: list[str]) -> str:
    head = ["task", "metric", "dir", "floor"]
    for s in systems:
        head += [s, "s"]
        if s != "mlguild" and "mlguild" in systems:
            head.append(f"ratio/{s}")
    head += ["best peer", "normalised", "verdict"]
    lines = []
    for row in rows:
        line = [
            row["task"],
            row["metric"],
            "max" if row["direction"] == "maximize" else "min",
            f"{row['floor']:.4f}" if row.get("floor") is not None else "—",
        ]
        for s in systems:
            r = row["results"].get(s)
            line += [fmt_score(r), f"{r['wall_s']:.0f}" if r and r.get("wall_s") is not None else "—"]
            if s != "mlguild" and "mlguild" in systems:
                q = row["ratios"].get(s)
                line.append(f"{q:.3f}" if q is not None else "—")
        versus = row.get("vs_best_peer") or {}
        normalised = versus.get("normalised")
        line += [
            versus.get("peer") or "—",
            f"{normalised:.3f}" if normalised is not None else "—",
            versus.get("verdict") or "—",
        ]
        lines.append(line)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    render = lambda cells: "  ".join(
        str(c).rjust(w) if i > 2 else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
    )
    return "\n".join([render(head), render(["-" * w for w in widths]), *map(render, lines)])


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--budget", default="5m", help="Wall-clock budget per system and task: 30s, 3m, 5m (default 5m).")
    ap.add_argument(
        "--tasks", default=",".join(EXAMPLES), help=f"Comma-separated examples (default: {','.join(EXAMPLES)})."
    )
    ap.add_argument(
        "--peers",
        default=",".join(PEERS),
        help=f"Comma-separated peers (default: all installed of {','.join(PEERS)}); 'none' for mlguild alone.",
    )
    ap.add_argument("--skip-mlguild", action="store_true", help="Run only the peers (checks their data handling).")
    ap.add_argument(
        "--out",
        type=Path,
        help="Results as JSON, written after every system (default: .bench/results/vs_automl-DATE-TIME.json).",
    )
    ap.add_argument(
        "--workdir",
        type=Path,
        help="Keep task folders, runs, submissions and logs here (default: a temporary folder, removed at the end).",
    )
    ap.add_argument("--keep", action="store_true", help="Keep the temporary work folder.")
    ap.add_argument(
        "--reuse",
        type=Path,
        help="An earlier results JSON of the same budget: its ok results whose submissions still exist are "
        "taken instead of running those systems again (run a long comparison in parts; same --workdir).",
    )
    ap.add_argument(
        "--bench-dir",
        type=Path,
        default=Path(os.environ.get("BENCH_DIR", ROOT / ".bench")),
        help="Where the peer venvs are (default: .bench/ in the repository).",
    )
    ap.add_argument("--timeout", help="Hard timeout of one system on one task (default: 2 x budget + 60 s).")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="Cores the peers may use (default: all).")
    ap.add_argument(
        "--setup", action="store_true", help="Install the selected peers (benchmarks/peers/setup.sh) and exit."
    )
    args = ap.parse_args()
    args.bench_dir = args.bench_dir.expanduser().resolve()  # peers run with another working directory

    peers = [] if args.peers.strip() == "none" else [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = [p for p in peers if p not in PEERS]
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    bad_tasks = [t for t in tasks if t not in EXAMPLES]
    if unknown or bad_tasks:
        ap.error(f"unknown peer(s) {unknown} or task(s) {bad_tasks}; peers: {list(PEERS)}, tasks: {list(EXAMPLES)}")
    if args.setup:
        env = {**os.environ, "BENCH_DIR": str(args.bench_dir)}
        venvs = dict.fromkeys(PEER_VENV.get(p, p) for p in peers if p not in OWN_VENV)  # each once, in order
        return subprocess.call(["bash", str(PEERS_DIR / "setup.sh"), *venvs], env=env)

    budget_s = parse_duration(args.budget)
    args.out = args.out or args.bench_dir / "results" / f"vs_automl-{time.strftime('%Y%m%d-%H%M%S')}.json"
    timeout_s = parse_duration(args.timeout) if args.timeout else 2 * budget_s + 60
    keep = args.keep or args.workdir is not None
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="vs_automl-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)

    available, skipped = [], {}
    for peer in peers:
        version, why = peer_available(args.bench_dir, peer)
        if version:
            available.append(peer)
            print(f"peer {peer} {version}: {peer_python(args.bench_dir, peer)}")
        else:
            skipped[peer] = why
            print(f"peer {peer} skipped: {why}")
    systems = ([] if args.skip_mlguild else ["mlguild"]) + available
    if not systems:
        print("nothing to run: no peer is installed and --skip-mlguild was given")
        return 2

    results = {
        "budget_s": budget_s,
        "timeout_s": timeout_s,
        "ratio": RATIO_NOTE,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": sys.version.split()[0]},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "systems": systems,
        "skipped_peers": skipped,
        "workdir": str(work) if keep else None,
        "tasks": [],
    }

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2, default=str))

    earlier = reusable(args.reuse, budget_s) if args.reuse else {}
    if earlier:
        systems += [s for s in dict.fromkeys(s for _, s in earlier) if s not in systems]
        available += [s for s in systems if s != "mlguild" and s not in available]
    print(f"budget {budget_s:g} s per system and task, hard timeout {timeout_s:g} s; work folder {work}")
    try:
        for name in tasks:
            task = load_task(build_example(name, work / "tasks" / name, overwrite=True))
            spec = task.spec
            spec_json = work / "tasks" / f"{name}.spec.json"
            spec_json.write_text(json.dumps(spec.public_dict(), indent=2))
            floor = score_file(task, task.sample_submission_path)["score"]
            row = {
                "task": name,
                "metric": spec.metric,
                "direction": spec.metric_direction,
                "modality": spec.modality,
                "floor": floor,
                "results": {},
                "ratios": {},
            }
            results["tasks"].append(row)
            for system in systems:
                if system != "mlguild" and not peer_applies(system, spec):
                    why = "several targets" if len(spec.target_columns) > 1 else "one target"
                    row["results"][system] = {"status": "n/a", "score": None, "wall_s": None, "reason": why}
                    continue
                if (name, system) in earlier:
                    row["results"][system] = earlier[(name, system)]
                    print(f"[{time.strftime('%H:%M:%S')}] {name}: {system} taken from {args.reuse}", flush=True)
                    continue
                print(f"[{time.strftime('%H:%M:%S')}] {name}: {system} ...", flush=True)
                why_not = None if system == "mlguild" else peer_serves(system, task)
                if why_not is not None:
                    row["results"][system] = {"status": "skipped", "score": None, "wall_s": None, "reason": why_not}
                    print(f"    skipped: {why_not}", flush=True)
                    continue
                try:
                    if system == "mlguild":
                        r = run_mlguild(task, name, budget_s, work, timeout_s)
                    else:
                        r = run_peer(
                            system, task, spec_json, name, budget_s, work, timeout_s, args.bench_dir, args.threads
                        )
                except Exception as exc:  # one broken system must not end the whole benchmark
                    r = {"status": "failed", "score": None, "wall_s": None, "reason": f"benchmark error: {exc!r}"}
                row["results"][system] = r
                shown = f"{spec.metric} {r['score']:.5g}" if r["score"] is not None else f"{r['status']}: {r['reason']}"
                print(f"    {shown}  ({r['wall_s'] or 0:.0f} s)", flush=True)
                save()
            ours = row["results"].get("mlguild", {}).get("score")
            for peer in available:
                row["ratios"][peer] = ratio(spec.metric_direction, ours, row["results"][peer]["score"])
            row["vs_best_peer"] = against_best_peer(task, row)
            save()
    finally:
        results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        save()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)

    print(
        f"\nbudget {budget_s:g} s each; test scores by mlguild's scorer on the same test answers; "
        f"s = wall seconds; floor = constant sample submission\n{RATIO_NOTE}\n"
    )
    print(table(results["tasks"], systems, available))
    results["summary"] = summary(results["tasks"])
    save()
    if results["summary"]["tasks"]:
        done = results["summary"]
        mean = "—" if done["mean_normalised"] is None else f"{done['mean_normalised']:.3f}"
        print(
            f"\nagainst the best peer of each task ({BEYOND_NOISE:.0%} of paired bootstrap resamples of the test "
            f"rows): ahead on {done['ahead']}, tied on {done['tie']}, behind on {done['behind']} of {done['tasks']}; "
            f"mean normalised score {mean} (0 = the constant floor, 1 = the best peer)"
        )
    problems = [
        (row["task"], s, r)
        for row in results["tasks"]
        for s, r in row["results"].items()
        if r["status"] not in ("ok", "n/a")
    ]
    notes = [
        (row["task"], r["rescore_note"])
        for row in results["tasks"]
        for r in row["results"].values()
        if r.get("rescore_note")
    ]
    for task_name, system, r in problems:
        print(f"  {task_name} / {system}: {r['status']}: {r['reason']}")
    for task_name, note in notes:
        print(f"  {task_name} / mlguild: {note}")
    for peer, why in skipped.items():
        print(f"  {peer} skipped: {why}")
    print(f"\nresults written to {args.out}" + (f"; runs, submissions and logs in {work}" if keep else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
