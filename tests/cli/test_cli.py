"""The mlguild command as a user runs it: real processes, real run directories."""

import os
import subprocess
import sys

import pytest
from conftest import make_task


def mlguild(*args, cwd, check=True):
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "mlguild.cli.app", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_dry_run_status_show_resume(tmp_path):
    task = make_task(tmp_path / "syn")
    out = mlguild("run", str(task), "--dry-run", "--run-id", "r1", cwd=tmp_path).stdout
    assert "brain scripted" in out and "best  n0001" in out and "graded once" in out
    run = tmp_path / "runs" / "r1"
    assert (run / "best" / "submission.csv").exists() and (run / "config.yaml").exists()

    status = mlguild("status", cwd=tmp_path).stdout  # the latest run by default
    assert "n0004" in status and "scored" in status and "final test grade" in status

    show = mlguild("show", "best", cwd=tmp_path).stdout
    assert "solution.py" in show and "holdout roc_auc" in show and "not trusted" in show

    more = mlguild("resume", "r1", "--iterations", "6", cwd=tmp_path).stdout
    assert "6 nodes" in more
    assert "n0006" in mlguild("status", "r1", cwd=tmp_path).stdout


def test_init_then_run_a_csv(tmp_path):
    import pandas as pd

    rows = [{"age": i % 70, "city": "abc"[i % 3], "bought": "yes" if i % 3 == 0 else "no"} for i in range(150)]
    pd.DataFrame(rows).to_csv(tmp_path / "shop.csv", index=False)
    out = mlguild("init", f"csv:{tmp_path / 'shop.csv'}", "--target", "bought", cwd=tmp_path).stdout
    assert "metric roc_auc" in out and "tasks/shop" in out
    mlguild("run", "tasks/shop", "--dry-run", "-n", "2", cwd=tmp_path)


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "nowhere"], "does not exist"),
        (["run", "example:nope", "--dry-run"], "no bundled example"),
        (["run", "nowhere", "--set", "search.bogus=1"], "bogus"),
        (["run", "nowhere", "--time", "soon"], "duration"),
        (["init", "csv:missing.csv", "--target", "y"], "does not exist"),
        (["status", "not-a-run"], "not a run directory"),
        (["resume"], "no runs"),
    ],
)
def test_user_errors_say_what_and_how(tmp_path, args, message):
    proc = mlguild(*args, cwd=tmp_path, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "fix:" in proc.stderr and "Traceback" not in proc.stderr


def test_examples_lists_the_bundled_tasks(tmp_path):
    out = mlguild("examples", cwd=tmp_path).stdout
    for name in ("churn", "ames", "reviews", "titanic", "digits"):
        assert f"example:{name}" in out


def test_config_lists_every_setting_with_its_default(tmp_path):
    out = mlguild("config", "search.mcgs", cwd=tmp_path).stdout
    assert "search.mcgs.exploration_start" in out and "1.4" in out and "search.mcgs.top_k" in out
    assert "search.num_drafts" not in out  # only the section asked for
    everything = mlguild("config", cwd=tmp_path).stdout
    assert "budget.default_time_s" in everything and "sandbox.script_timeout_s" in everything
    bad = mlguild("config", "nope", cwd=tmp_path, check=False)
    assert bad.returncode == 2 and "no setting is named 'nope'" in bad.stderr and "search" in bad.stderr
