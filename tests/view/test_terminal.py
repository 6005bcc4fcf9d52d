"""The live terminal view: the board's content at 80 columns, and a real run under a
pseudo-terminal (the board drawn) and on a pipe or with --quiet (plain lines)."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from collections import Counter

from conftest import make_task
from rich.console import Console

from mlguild.view.terminal import Snapshot, bar, board, lines, sparkline


def _render(snapshot: Snapshot, width: int = 80) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(board(snapshot))
    return console.export_text()


def test_board_shows_workers_best_sparkline_budgets_and_failures_in_80_columns():
    snap = Snapshot(
        metric="rmse",
        direction="minimize",
        workers={1: "improve n0007: UCT: improve n0004", 2: ""},
        best=("n0004", 2.89489, "Improve: LightGBM, more leaves"),
        scores=[4.2, 3.5, 2.9, 3.1],
        floor=3.38,
        spent_s=90,
        time_s=600,
        nodes=7,
        iterations=None,
        tokens=12000,
        max_tokens=100000,
        cost_usd=0.12,
        max_cost_usd=1.0,
        failures=Counter({"crash": 2, "timeout": 1}),
    )
    text = _render(snap)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "worker 1" in text and "improve n0007" in text and "worker 2" in text and "idle" in text
    assert "rmse 2.8949 (n0004: Improve: LightGBM" in text  # the score itself is never cut
    assert sparkline(snap.scores, "minimize") in text
    assert "1:30 of 10:00" in text and bar(90, 600) in text
    assert "7 of ∞" in text
    assert "12,000 of 100,000" in text and "$0.1200 of $1.00" in text
    assert "crash 2, timeout 1" in text
    assert lines(snap)[0].startswith("best rmse 2.8949")


def test_sparkline_rises_when_the_metric_improves_whatever_its_direction():
    assert sparkline([3.0, 2.0, 1.0], "minimize") == "▁▅█"
    assert sparkline([0.1, 0.2, 0.3], "maximize") == "▁▅█"
    assert sparkline([], "maximize") == ""
    assert bar(5, None) == ""  # an unlimited budget has no bar


def _run_args(tmp_path, run_id: str) -> list[str]:
    task = make_task(tmp_path / f"task-{run_id}", n=120, task_type="regression", metric="rmse")
    return [sys.executable, "-m", "mlguild", "run", str(task), "--dry-run", "--workers", "2", "--iterations", "4"] + [
        "--sandbox",
        "local",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--run-id",
        run_id,
    ]


def test_a_run_on_a_terminal_draws_the_board(tmp_path):
    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "LINES": "40", "TERM": "xterm", "MLGUILD_HOME": str(tmp_path)}
    proc = subprocess.Popen(_run_args(tmp_path, "tty"), stdin=secondary, stdout=secondary, stderr=secondary, env=env)
    os.close(secondary)
    out = b""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        ready, _, _ = select.select([primary], [], [], 0.5)
        if ready:
            try:
                data = os.read(primary, 65536)
            except OSError:  # the run closed the terminal
                break
            if not data:
                break
            out += data
        elif proc.poll() is not None:
            break
    proc.wait(30)
    os.close(primary)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-2000:]
    assert "worker 2" in text and "scores" in text and "nodes" in text  # the live board


def test_quiet_or_a_pipe_prints_plain_lines(tmp_path):
    env = {**os.environ, "MLGUILD_HOME": str(tmp_path)}
    out = subprocess.run(
        _run_args(tmp_path, "piped") + ["--quiet"], capture_output=True, text=True, env=env, timeout=180
    )
    assert out.returncode == 0, out.stderr
    assert "\x1b[" not in out.stdout  # no cursor movement: a log reads as lines
    assert "best rmse" in out.stdout and re.search(r"^time 0:\d\d of ∞; nodes \d of 4$", out.stdout, re.M)
    assert "Draft: prior predictor" in out.stdout  # each node's line shows its title
