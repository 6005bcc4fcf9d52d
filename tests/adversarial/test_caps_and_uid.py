"""The caps added with the namespace layer (disk, files, processes), on both layers, and
the always-on layer's uid drop. Real processes, nothing mocked."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from mlguild.sandbox import BwrapSandbox, ExecStatus, Limits, LocalSandbox, safe_env
from mlguild.sandbox.bwrap import probe

from .arena import kill_all, survivors

LAYERS = [
    pytest.param(LocalSandbox, id="local"),
    pytest.param(BwrapSandbox, id="bwrap", marks=pytest.mark.skipif(not probe()[0], reason=f"{probe()[1]}")),
]


@pytest.fixture
def marker():
    m = f"capmark{uuid.uuid4().hex[:12]}"
    yield m
    left = survivors(m)
    kill_all(m)
    assert not left, f"processes survived: {left}"


def run(layer, d: Path, code: str, marker: str, **limits):
    (d / "script.py").write_text(textwrap.dedent(code))
    t0 = time.monotonic()
    r = layer().run(
        [sys.executable, "script.py"],
        d,
        safe_env(cwd=d, extra={"MLGUILD_TEST_MARKER": marker}),
        Limits(**limits),
        d / "stdout.txt",
        d / "stderr.txt",
    )
    return r, time.monotonic() - t0


@pytest.mark.parametrize("layer", LAYERS)
def test_disk_burst_between_samples_is_still_reported(layer, tmp_path, marker):
    # 24 MiB written and the script gone before the first sample: the measurement after
    # the sweep still marks the run, so a disk hog never passes as a success.
    r, _ = run(
        layer,
        tmp_path,
        """
        with open('burst.bin', 'wb') as f:
            f.write(b'b' * (24 * 1024 * 1024))
    """,
        marker,
        disk_mb=8,
    )
    assert r.status is ExecStatus.DISK and r.disk_exceeded and r.peak_disk_mb >= 8
    assert "8 MiB" in r.reason


@pytest.mark.parametrize("layer", LAYERS)
def test_many_files_hit_the_file_cap(layer, tmp_path, marker):
    r, elapsed = run(
        layer,
        tmp_path,
        """
        import os
        os.mkdir('many')
        for i in range(100_000):
            open(f'many/{i}', 'w').close()
    """,
        marker,
        max_files=500,
        timeout_s=30,
    )
    assert r.status is ExecStatus.DISK and elapsed < 10
    assert len(os.listdir(tmp_path / "many")) < 100_000


@pytest.mark.parametrize("layer", LAYERS)
def test_process_count_cap_kills_the_tree(layer, tmp_path, marker):
    r, elapsed = run(
        layer,
        tmp_path,
        """
        import os, time
        for _ in range(60):
            if os.fork() == 0:
                time.sleep(1000)
        time.sleep(1000)
    """,
        marker,
        tree_procs=20,
        timeout_s=5,
    )
    assert r.status is ExecStatus.PROCS and r.procs_exceeded and elapsed < 4
    assert "20 live processes" in r.reason


# A uid of this test's own: RLIMIT_NPROC counts every process and thread of the uid on the
# machine, and the suite's other scripts, run beside it by the other test workers, run as the
# default 65534 (on CI a busy LightGBM there once left this script no process to start).
_OWN_UID = 65533


@pytest.mark.skipif(
    not (os.geteuid() == 0 and probe()[0] and BwrapSandbox().drop_problem(_OWN_UID, _OWN_UID) == ""),
    reason="needs the namespace layer's uid drop (root, bwrap, setpriv)",
)
def test_nproc_is_enforced_by_the_kernel_under_the_dropped_uid(tmp_path, marker):
    r, _ = run(
        BwrapSandbox,
        tmp_path,
        """
        import os, time
        for i in range(60):
            try:
                pid = os.fork()
            except BlockingIOError:
                print('refused after', i); break
            if pid == 0:
                time.sleep(1000)
    """,
        marker,
        nproc=25,
        tree_procs=None,
        timeout_s=10,
        run_as_uid=_OWN_UID,
    )
    assert r.status is ExecStatus.OK and r.run_uid == _OWN_UID, r.stderr_tail
    refused_after = int(r.stdout_tail.split()[-1])
    assert 0 < refused_after < 25  # the script's own process counts too


@pytest.mark.parametrize("layer", LAYERS)
def test_data_dir_holding_the_working_directory_is_refused(layer, tmp_path):
    # A data dir above the node dir would be the run dir itself, sealed labels included.
    node = tmp_path / "run" / "nodes" / "n1"
    node.mkdir(parents=True)
    with pytest.raises(ValueError, match="contains the working directory"):
        layer().run(
            [sys.executable, "-c", "pass"],
            node,
            safe_env(cwd=node),
            Limits(),
            node / "o",
            node / "e",
            data_dir=tmp_path / "run",
        )


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"),
    reason="needs root and a system python that any uid can run",
)
def test_local_layer_drops_to_nobody_when_it_can():
    # pytest's tmp dirs are mode 0700: use one that another uid can reach, as a run is
    probe_dir = Path(tempfile.mkdtemp(prefix="mlguild-drop-"))
    try:
        probe_dir.chmod(0o755)
        node = probe_dir / "node"
        node.mkdir(mode=0o755)
        (node / "solution.py").write_text(
            textwrap.dedent("""
            import os
            print(os.getuid(), os.getgid(), os.getgroups())
            open('mine.txt', 'w').write('ok')
            os.unlink('mine.txt'); open('kept.txt', 'w').write('ok')
            for attempt in (lambda: open('solution.py', 'a'), lambda: os.unlink('plan.md')):
                try:
                    attempt()
                    print('PWNED')
                except OSError:
                    pass
        """)
        )
        (node / "plan.md").write_text("plan\n")
        before = os.stat(node)
        r = LocalSandbox().run(
            ["/usr/bin/python3", "solution.py"],
            node,
            safe_env(cwd=node),
            Limits(timeout_s=20),
            node / "stdout.txt",
            node / "stderr.txt",
        )
        assert r.status is ExecStatus.OK, r.stderr_tail
        assert r.run_uid == 65534 and r.notes == ""
        assert r.stdout_tail.split("\n")[0] == "65534 65534 []" and "PWNED" not in r.stdout_tail
        assert (node / "kept.txt").stat().st_uid == 65534 and (node / "plan.md").exists()
        after = os.stat(node)  # the grant on the working directory is undone
        assert (after.st_mode, after.st_gid) == (before.st_mode, before.st_gid)
    finally:
        shutil.rmtree(probe_dir)


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop is only attempted as root")
def test_local_layer_says_why_it_did_not_drop(tmp_path, marker):
    # pytest's tmp_path is under a 0700 directory, so uid 65534 can never reach it
    r, _ = run(LocalSandbox, tmp_path, "import os; print(os.getuid())", marker)
    assert r.status is ExecStatus.OK and r.run_uid == 0 and r.stdout_tail == "0\n"
    assert "not 65534" in r.notes and "not reachable" in r.notes
    assert r.layer == "local"
