"""A disk that fills up while a run works (issue 25, item 10): one line naming the full disk
and the resume command, never a ``sqlite3.OperationalError`` traceback; and the run really
resumes once space is freed. Real full filesystems: a small tmpfs mounted for the test (as
root; skipped, with the reason, where one cannot be mounted)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import make_task, mlguild, one_line

from mlguild.rundir.disk_full import DiskFull, resumable_when_full
from mlguild.rundir.journal import Journal
from mlguild.util.fs import atomic_write


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MB tmpfs, unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (a real full disk cannot be made otherwise)")
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave_bytes: int) -> Path:
    """A filler file that leaves about ``leave_bytes`` free on ``disk``."""
    stats = os.statvfs(disk)
    free = stats.f_bavail * stats.f_frsize
    filler = disk / "filler.bin"
    with open(filler, "wb") as fh:
        remaining = max(0, free - leave_bytes)
        while remaining > 0:
            chunk = min(remaining, 1 << 20)
            fh.write(b"\0" * chunk)
            remaining -= chunk
    return filler


def test_a_disk_that_fills_during_a_run_ends_in_one_line_and_the_run_resumes(small_disk, tmp_path):
    task = make_task(tmp_path / "task")
    runs = small_disk / "runs"
    made = mlguild(
        "run", str(task), "--dry-run", "--iterations", "400", "--no-launch", "--runs-dir", str(runs),
        "--run-id", "full", cwd=tmp_path,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    run = runs / "full"
    filler = fill(small_disk, 400_000)  # 400 KB free: a few nodes' files, then the disk is full

    stopped = mlguild("resume", str(run), "--quiet", cwd=tmp_path)
    err = one_line(stopped.stderr)
    assert stopped.returncode == 2, stopped.stdout + stopped.stderr
    assert f"error: the disk holding {runs} is full (" in err
    assert "the run stopped, its finished nodes are kept" in err
    assert f"fix: free space on that disk, then continue the run: `mlguild resume {run}`" in err
    assert "Traceback" not in stopped.stderr and "OperationalError" not in stopped.stderr
    assert len(stopped.stderr.strip().splitlines()) == 2  # the error and its fix, nothing else

    filler.unlink()  # space freed: the same run continues
    records = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines() if line.strip()]
    done_before = [r["id"] for r in records if r["type"] == "node_finished"]
    resumed = mlguild("resume", str(run), "--iterations", str(len(done_before) + 3), "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    records = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    finished = [r["id"] for r in records if r["type"] == "node_finished"]
    assert finished[: len(done_before)] == done_before and len(finished) > len(done_before)
    assert len(set(finished)) == len(finished)  # no finished node run again
    assert (run / "final" / "submission.csv").is_file()


def test_sqlite_and_plain_writes_on_a_full_disk_are_both_named(small_disk, tmp_path):
    """Each way a write meets the full disk: SQLite's "database or disk is full", the journal's
    append (a plain write, ENOSPC or a short write) and a node file's atomic write."""
    run = small_disk / "runs" / "r1"
    (run / "nodes").mkdir(parents=True)
    db = sqlite3.connect(run / "pools.sqlite")
    db.execute("create table t (blob)")
    db.commit()
    journal = Journal(run / "journal.jsonl")
    fill(small_disk, 0)

    def stopped_by(write) -> str:
        with pytest.raises(DiskFull) as caught, resumable_when_full(run):
            write()
        assert str(run.parent) in caught.value.message
        assert caught.value.fix == f"free space on that disk, then continue the run: `mlguild resume {run}`"
        return caught.value.message

    def insert() -> None:
        db.execute("insert into t values (?)", (b"x" * 2_000_000,))
        db.commit()

    assert "(SQLite: database or disk is full)" in stopped_by(insert)
    assert "No space left on device" in stopped_by(lambda: journal.append("node_finished", text="y" * 100_000))
    assert "No space left on device" in stopped_by(lambda: atomic_write(run / "nodes" / "report.md", "z" * 100_000))
    journal.close()
    db.close()
    with pytest.raises(ValueError), resumable_when_full(run):  # anything else passes unchanged
        raise ValueError("not a disk")
