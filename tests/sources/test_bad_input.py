"""Hostile and broken input through the real CLI: every case ends with an error line, a fix
line and exit code 2, and nothing outside a run directory is ever written."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import make_task

from mlguild.config import load_config
from mlguild.core.errors import FirewallError, RunError, TaskError
from mlguild.firewall.verifier import verify_workspace
from mlguild.firewall.workspace import build_workspace
from mlguild.rundir.folder import create_run, new_run_id
from mlguild.task.folder import Task, load_task


def mlguild(*args, cwd, timeout=300):
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "mlguild.cli.app", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_user_error(proc, *words):
    """Exit 2, no traceback, exactly an error line and a fix line, mentioning ``words``."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("fix: "), proc.stderr
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)
    return lines


def edit_spec(root: Path, **changes) -> None:
    spec = yaml.safe_load((root / "task.yaml").read_text())
    spec.update(changes)
    (root / "task.yaml").write_text(yaml.safe_dump(spec))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ 1. file names leave the task


@pytest.fixture
def victim(tmp_path) -> Path:
    """The user's own CSV, outside any task folder: it must never change."""
    path = tmp_path / "mine" / "precious.csv"
    path.parent.mkdir()
    path.write_text("id,value\n1,keep me\n")
    return path


@pytest.mark.parametrize("field", ["train_file", "test_file", "sample_submission", "answers_file"])
@pytest.mark.parametrize("how", ["absolute", "climb", "climb_inside"])
def test_a_spec_file_name_outside_the_task_is_refused_at_load(tmp_path, victim, field, how):
    root = make_task(tmp_path / "t")
    name = {
        "absolute": str(victim),
        "climb": "../../mine/precious.csv",
        "climb_inside": "sub/../../../mine/precious.csv",
    }[how]
    edit_spec(root, **{field: name})
    with pytest.raises(TaskError) as info:
        load_task(root)
    assert field in info.value.message and info.value.fix
    assert "absolute" in info.value.message or "'..'" in info.value.message


def test_run_with_a_train_file_outside_the_task_writes_nothing(tmp_path, victim):
    """The defect: the firewall wrote the train split over the user's CSV."""
    root = make_task(tmp_path / "t")
    edit_spec(root, train_file=str(victim))
    before, task_before = victim.read_bytes(), snapshot(root)
    proc = mlguild("run", str(root), "--dry-run", "--run-id", "r1", cwd=tmp_path)
    assert_user_error(proc, "train_file", "absolute path", "task.yaml")
    assert victim.read_bytes() == before and snapshot(root) == task_before
    assert not (tmp_path / "runs").exists()


def test_a_sample_submission_named_by_absolute_path_is_a_task_error(tmp_path):
    root = make_task(tmp_path / "t")
    edit_spec(root, sample_submission=str(root / "public" / "sample_submission.csv"))
    proc = mlguild("run", str(root), "--dry-run", cwd=tmp_path)
    assert_user_error(proc, "sample_submission", "absolute path")


def test_a_link_out_of_the_task_is_refused(tmp_path, victim):
    root = make_task(tmp_path / "t")
    (root / "public" / "train.csv").unlink()
    (root / "public" / "train.csv").symlink_to(victim)
    with pytest.raises(TaskError, match="leads outside") as info:
        load_task(root)
    assert "copy the file" in info.value.fix


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"test_file": "train.csv"}, "three different files"),
        ({"test_file": "holdout.csv"}, "harness writes"),
        ({"sample_submission": "task.json"}, "harness writes"),
        ({"train_file": "./train.csv"}, "not a plain path"),
        ({"train_file": ""}, "empty"),
    ],
)
def test_spec_file_names_that_collide_or_are_not_plain(tmp_path, changes, message):
    root = make_task(tmp_path / "t")
    edit_spec(root, **changes)
    with pytest.raises(TaskError, match=message):
        load_task(root)


def test_a_public_file_named_like_a_harness_file_is_refused(tmp_path):
    root = make_task(tmp_path / "t")
    (root / "public" / "task.json").write_text("{}")
    with pytest.raises(TaskError, match="harness writes"):
        create_run(load_task(root), load_config(), tmp_path / "runs")
    assert not list((tmp_path / "runs").iterdir())


def test_the_firewall_never_writes_outside_the_run_even_when_handed_a_bad_name(tmp_path, victim):
    """Defence in depth: a spec that skipped validation still cannot lead the firewall out."""
    task = load_task(make_task(tmp_path / "t"))
    bad = task.spec.model_copy(update={"test_file": str(victim)})  # model_copy does not validate
    before = victim.read_bytes()
    with pytest.raises(FirewallError, match="outside"):
        build_workspace(Task(task.root, bad, task.description), tmp_path / "run", load_config().firewall)
    assert victim.read_bytes() == before


# ------------------------------------------------------------------ run ids


@pytest.mark.parametrize("run_id", ["../../escaped", "/tmp/abs-run", "", "a/b", ".hidden", "..", "-x"])
def test_run_ids_that_are_not_plain_names_are_refused(tmp_path, run_id):
    root = make_task(tmp_path / "t")
    cwd = tmp_path / "work" / "here"
    cwd.mkdir(parents=True)
    proc = mlguild("run", str(root), "--dry-run", "--run-id", run_id, cwd=cwd)
    assert_user_error(proc, "--run-id", "not a plain name")
    assert not (tmp_path / "escaped").exists() and not (cwd / "runs").exists()
    assert not Path("/tmp/abs-run").exists()


def test_a_task_name_never_leads_a_run_out_of_the_runs_folder():
    assert "/" not in new_run_id("../../evil") and not new_run_id("../../evil").startswith(".")
    assert new_run_id("my task: v2").startswith("my-task-v2-")


# ------------------------------------------------------------------ 2. the machine says no


def test_a_file_given_as_runs_dir(tmp_path):
    root = make_task(tmp_path / "t")
    (tmp_path / "afile").write_text("not a folder")
    assert_user_error(
        mlguild("run", str(root), "--dry-run", "--runs-dir", "afile", cwd=tmp_path), "is a file", "--runs-dir"
    )
    proc = mlguild("run", str(root), "--dry-run", "--runs-dir", "afile/deeper", cwd=tmp_path)
    assert_user_error(proc, "Not a directory", "must be folders")
    assert (tmp_path / "afile").read_text() == "not a folder"


def test_runs_dir_missing_parents_are_created(tmp_path):
    root = make_task(tmp_path / "t")
    proc = mlguild("run", str(root), "--dry-run", "-n", "1", "--runs-dir", "a/b/c", "--run-id", "r", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a" / "b" / "c" / "r" / "journal.jsonl").exists()


def _mounted(tmp_path: Path, options: str, *args: str):
    """`mlguild run` with ``runs`` a fresh tmpfs mounted with ``options``, in a private mount
    namespace (the mount vanishes with the process). None where this machine cannot."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    runs = tmp_path / "mnt"
    runs.mkdir()
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o {options} tmpfs {runs}"], capture_output=True
    )
    if probe.returncode != 0:
        return None
    cli = " ".join(f"'{a}'" for a in [sys.executable, "-m", "mlguild.cli.app", *args, "--runs-dir", str(runs)])
    script = f"mount -t tmpfs -o {options} tmpfs {runs} && {cli}; code=$?; ls -A {runs} >&2; exit $code"
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "options, words",
    [
        ("size=16k", ["No space left", "free disk space"]),
        ("ro", ["Read-only file system", "writable disk"]),
    ],
)
def test_a_full_or_read_only_runs_dir(tmp_path, options, words):
    root = make_task(tmp_path / "t")
    proc = _mounted(tmp_path, options, "run", str(root), "--dry-run", "--run-id", "r1")
    if proc is None:
        pytest.skip("needs root and mount namespaces (unshare -m) to mount a tmpfs")
    listing = proc.stderr.strip().splitlines()[2:]  # what the runs dir held afterwards
    proc.stderr = "\n".join(proc.stderr.strip().splitlines()[:2])
    assert_user_error(proc, "cannot create run r1", *words)
    assert listing == []  # no half-built run is left behind


def test_a_task_path_that_is_a_file_or_into_a_missing_folder(tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    assert_user_error(mlguild("run", "data.csv", "--dry-run", cwd=tmp_path), "is a file", "mlguild init csv:")
    assert_user_error(
        mlguild("run", str(tmp_path / "no" / "such" / "task"), "--dry-run", cwd=tmp_path), "does not exist"
    )
    assert_user_error(mlguild("run", "x" * 300, "--dry-run", cwd=tmp_path))


def test_init_into_a_folder_under_a_file(tmp_path):
    pd.DataFrame({"a": range(50), "y": [0, 1] * 25}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "afile").write_text("x")
    proc = mlguild("init", "csv:d.csv", "--target", "y", "--out", "afile/t", cwd=tmp_path)
    assert_user_error(proc, "cannot write the task folder", "--out")


# ------------------------------------------------------------------ 3. text from data is shown, not interpreted


def test_markup_and_emoji_codes_in_data_are_printed_as_written(tmp_path):
    root = make_task(tmp_path / "t")
    edit_spec(root, target_columns=["[/]", ":x:", "[bold red]boom"], submission_columns=["id", "[/]"])
    proc = mlguild("run", str(root), "--dry-run", cwd=tmp_path)
    assert_user_error(proc, "[/]", ":x:", "[bold red]boom")
    assert "❌" not in proc.stderr


def test_control_characters_in_messages_are_escaped(tmp_path):
    from mlguild.cli.common import plain

    assert plain("a\nb\x1b[31mred[/]") == "a\\nb\\x1b[31mred\\[/]"
    assert len(plain("z" * 100_000)) < 1100


def test_status_escapes_what_came_from_the_task(tmp_path):
    root = make_task(tmp_path / "t")
    edit_spec(root, name="[/]:x:")
    run = create_run(load_task(root), load_config(), tmp_path / "runs", run_id="r")
    run.close()
    proc = mlguild("status", "r", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "task [/]:x:" in proc.stdout


# ------------------------------------------------------------------ 6. killed during creation


def _big_task(root: Path) -> Path:
    """Large enough that creating its run takes a noticeable moment."""
    return make_task(root, n=60_000)


def test_a_kill_during_creation_leaves_no_run_and_is_cleaned_by_the_next_run(tmp_path):
    root = _big_task(tmp_path / "t")
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlguild.cli.app", "run", str(root), "--dry-run", "-n", "1", "--run-id", "r1"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    partial = tmp_path / "runs" / ".r1.partial"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (partial / "workspace").exists() and proc.poll() is None:
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if not partial.exists():
        pytest.skip("the run was created before the kill landed")
    assert not (tmp_path / "runs" / "r1").exists()

    lines = assert_user_error(mlguild("resume", "r1", cwd=tmp_path), "half-built", "rm -rf", "--run-id r1")
    assert str(root) in lines[1]
    proc = mlguild("run", str(root), "--dry-run", "-n", "1", "--run-id", "r1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "runs" / "r1" / "journal.jsonl").exists() and not partial.exists()


def test_a_half_built_run_folder_is_named_as_such_by_every_command(tmp_path):
    """What a kill left behind before creation was crash-safe: a folder with no journal."""
    root = make_task(tmp_path / "t")
    run = create_run(load_task(root), load_config(), tmp_path / "runs", run_id="r2")
    run.close()
    (run.path / "journal.jsonl").unlink()
    for args in (["resume", "r2"], ["status", "r2"], ["run", str(root), "--dry-run", "--run-id", "r2"]):
        lines = assert_user_error(mlguild(*args, cwd=tmp_path), "half-built", "rm -rf", "--run-id r2")
        assert f"mlguild run {root}" in lines[1]
    assert (run.path / "task.json").exists()  # named, never silently deleted


def test_a_partial_run_still_being_built_is_left_alone(tmp_path):
    root = make_task(tmp_path / "t")
    partial = tmp_path / "runs" / ".r3.partial"
    partial.mkdir(parents=True)
    fd = os.open(partial / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a creating process holds it
        proc = mlguild("run", str(root), "--dry-run", "--run-id", "r3", cwd=tmp_path)
        assert_user_error(proc, "another mlguild process")
        assert partial.exists()
    finally:
        os.close(fd)


def test_create_run_does_not_leave_a_partial_folder_on_error(tmp_path):
    root = make_task(tmp_path / "t")
    (root / "private" / "answers.csv").write_text("id,y\nnope,1\n")
    with pytest.raises(TaskError):
        create_run(load_task(root), load_config(), tmp_path / "runs", run_id="r4")
    assert list((tmp_path / "runs").iterdir()) == []


def test_an_existing_run_is_never_overwritten(tmp_path):
    root = make_task(tmp_path / "t")
    create_run(load_task(root), load_config(), tmp_path / "runs", run_id="r5").close()
    with pytest.raises(RunError, match="already exists"):
        create_run(load_task(root), load_config(), tmp_path / "runs", run_id="r5")


def test_known_labels_are_sealed_and_verified(tmp_path):
    """A multiclass task's every training label is sealed beside the answers (for the scorer),
    and the independent verifier still passes."""
    root = make_task(tmp_path / "t", task_type="multiclass", metric="accuracy")
    frame = pd.read_csv(root / "public" / "train.csv", dtype=str)
    frame.loc[frame.index[:2], "y"] = "rare"  # two rows: too few to reach the holdout
    frame.to_csv(root / "public" / "train.csv", index=False)
    run = create_run(load_task(root), load_config(), tmp_path / "runs", run_id="r")
    run.close()
    import json

    known = json.loads((run.workspace.sealed_dir / "labels.json").read_text())
    assert known == {"y": ["0", "1", "rare"]}
    assert "rare" not in set(pd.read_csv(run.workspace.holdout_answers, dtype=str)["y"])
    assert verify_workspace(run.path, "id", ["y"]).ok
