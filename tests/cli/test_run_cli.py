"""`mlguild run` as a user runs it: which sandbox layer it accepts, its budget flags, and
its exit status after Ctrl-C. Real processes; bubblewrap made unusable for real, through
$MLGUILD_BWRAP (a binary that is missing, or one that fails)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_task, mlguild, one_line


def layer_lines(stdout: str) -> list[str]:
    """The lines that say which sandbox layer runs the scripts, each with the lines it is
    wrapped over (to 80 columns, under an indent of 8) joined to it."""
    found: list[str] = []
    inside = False  # in a layer's line and the lines it is wrapped over
    for line in stdout.splitlines():
        if line.startswith(("sandbox ", "warning: sandbox ")):
            found.append(line)
            inside = True
        elif inside and line.startswith(" " * 8):
            found[-1] += " " + line.strip()
        else:
            inside = False
    return found


@pytest.fixture
def task(tmp_path) -> Path:
    return make_task(tmp_path / "task")


@pytest.mark.parametrize("bwrap", ["/nonexistent/bwrap", "/bin/false"])
def test_auto_without_a_usable_bwrap_refuses_llm_written_scripts_unless_asked(bwrap, task, tmp_path):
    no_bwrap = {"MLGUILD_BWRAP": bwrap}
    # the llm brain, driven by the scripted fake LLM (--dry-run): its scripts are LLM-written
    refused = mlguild("run", str(task), "--dry-run", "--brain", "llm", "-n", "1", cwd=tmp_path, env=no_bwrap)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    err = one_line(refused.stderr)
    assert "LLM-written scripts run on the weaker local layer only when asked" in err
    assert "--sandbox local" in err and "apt-get install -y bubblewrap" in err
    assert not (tmp_path / "runs").exists(), "a run was created before the refusal"

    asked = mlguild(
        "run", str(task), "--dry-run", "--brain", "llm", "-n", "1", "--sandbox", "local", cwd=tmp_path, env=no_bwrap
    )
    assert asked.returncode == 0, asked.stdout + asked.stderr
    lines = layer_lines(asked.stdout)
    assert len(lines) == 1 and lines[0].startswith("sandbox local") and asked.stdout.count("WEAK") == 1
    assert "read sealed labels" in lines[0] and "warning" not in lines[0]  # asked for: said once, no alarm


def test_auto_without_bwrap_runs_the_harness_own_scripts_with_one_warning(task, tmp_path):
    out = mlguild("run", str(task), "--dry-run", "-n", "1", cwd=tmp_path, env={"MLGUILD_BWRAP": "/nonexistent/bwrap"})
    assert out.returncode == 0, out.stdout + out.stderr
    lines = layer_lines(out.stdout)
    assert len(lines) == 1 and lines[0].startswith("warning: sandbox local") and out.stdout.count("WEAK") == 1
    assert "MLGUILD_BWRAP=/nonexistent/bwrap is not an executable file" in lines[0]


def test_sandbox_flag_bwrap_fails_when_bwrap_is_unusable(task, tmp_path):
    out = mlguild(
        "run",
        str(task),
        "--dry-run",
        "-n",
        "1",
        "--sandbox",
        "bwrap",
        cwd=tmp_path,
        env={"MLGUILD_BWRAP": "/bin/false"},
    )
    assert out.returncode == 2 and "sandbox 'bwrap' is not usable here" in one_line(out.stderr)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("n", ["0", "-3"])
def test_iterations_below_one_is_an_error_not_no_limit(n, task, tmp_path):
    for args in (["run", str(task), "--dry-run"], ["run", str(task), "--time", "1m"]):
        out = mlguild(*args, "--iterations", n, cwd=tmp_path)
        assert out.returncode == 2, out.stdout + out.stderr
        err = one_line(out.stderr)
        assert f"--iterations must be at least 1 (got {n})" in err and "fix:" in err
    assert not (tmp_path / "runs").exists()


def _deaf_to_ctrl_c() -> None:
    """As a launcher may start mlguild: SIGINT ignored and blocked (both survive exec)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


@pytest.mark.parametrize("launched", ["plainly", "with SIGINT ignored and blocked"])
def test_ctrl_c_exits_130_after_the_resume_hint(task, tmp_path, launched):
    # A wrapper must tell an interrupted run from a finished one: the shell's 128 + SIGINT.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlguild",
            "run",
            str(task),
            "--brain",
            "recipes",
            "--time",
            "2m",
            "--run-id",
            "r",
            "--runs-dir",
            str(tmp_path / "runs"),
        ],
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_deaf_to_ctrl_c if launched != "plainly" else None,
    )
    try:
        journal = tmp_path / "runs" / "r" / "journal.jsonl"
        end = time.monotonic() + 120
        while not (journal.exists() and '"node_started"' in journal.read_text()):
            assert time.monotonic() < end and proc.poll() is None, "no node started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, out + err
    assert "stopped: interrupted by user" in out and f"mlguild resume {tmp_path / 'runs' / 'r'}" in out
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert records[-1]["type"] == "session_ended" and records[-1]["reason"] == "interrupted by user"


def test_resume_takes_sandbox_too(task, tmp_path):
    first = mlguild("run", str(task), "--dry-run", "-n", "1", "--run-id", "r", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    more = mlguild("resume", "r", "-n", "2", "--sandbox", "local", cwd=tmp_path)
    assert more.returncode == 0, more.stdout + more.stderr
    assert layer_lines(more.stdout)[0].startswith("sandbox local")
    assert "kind: local" in (tmp_path / "runs" / "r" / "config.yaml").read_text()
    bad = mlguild("resume", "r", "-n", "0", cwd=tmp_path)
    assert bad.returncode == 2 and "--iterations must be at least 1" in one_line(bad.stderr)


def test_an_unknown_brain_is_refused_before_anything_is_created(task, tmp_path):
    out = mlguild(
        "run", str(task), "--dry-run", "--brain", "recipe", "--runs-dir", str(tmp_path / "runs"), cwd=tmp_path
    )
    assert out.returncode == 2, out.stdout + out.stderr
    err = one_line(out.stderr)
    assert "unknown brain 'recipe'" in err and "did you mean --brain recipes?" in err
    assert not (tmp_path / "runs").exists()
