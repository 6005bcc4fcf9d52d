"""What the namespace layer promises beyond the attack corpus, and that honest scripts
still work inside it. Skipped (with the reason) where bubblewrap is unusable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import mlguild
from mlguild.sandbox import BwrapSandbox, ExecStatus, Limits, LocalSandbox, safe_env
from mlguild.sandbox.bwrap import DATA_MOUNT, probe

from .arena import kill_all, survivors

pytestmark = pytest.mark.skipif(not probe()[0], reason=f"namespace layer: {probe()[1]}")
IS_ROOT = os.geteuid() == 0
SRC_DIR = Path(mlguild.__file__).resolve().parents[1]


@pytest.fixture
def node(tmp_path):
    """run/nodes/n1 as the working directory, run/workspace/data as the data, and a
    marker in the environment; anything left running after the test fails it."""
    d = tmp_path / "run" / "nodes" / "n1"
    d.mkdir(parents=True)
    data = tmp_path / "run" / "workspace" / "data"
    data.mkdir(parents=True)
    (data / "train.csv").write_text("id,y\n1,0\n")
    (tmp_path / "run" / "sealed").mkdir()
    (tmp_path / "run" / "sealed" / "answers.csv").write_text("id,y\n1,SEALED\n")
    marker = f"ctrmark{os.getpid()}x{time.monotonic_ns()}"
    yield d, data, marker
    left = survivors(marker)
    kill_all(marker)
    assert not left, f"processes survived: {left}"


def run(sandbox, d: Path, code: str, data: Path | None = None, marker: str = "", **limits):
    (d / "script.py").write_text(textwrap.dedent(code))
    env = safe_env(cwd=d, extra={"MLGUILD_TEST_MARKER": marker} if marker else None)
    return sandbox.run(
        [sys.executable, "script.py"], d, env, Limits(**limits), d / "stdout.txt", d / "stderr.txt", data_dir=data
    )


@pytest.mark.parametrize("layer", [LocalSandbox, BwrapSandbox])
def test_same_contract_on_both_layers(layer, node):
    d, data, marker = node
    r = run(
        layer(),
        d,
        """
        import os, resource, sys
        data = os.environ['MLGUILD_DATA']
        print(os.getcwd(), data, sorted(os.listdir(data)))
        nnp = [l for l in open('/proc/self/status') if l.startswith('NoNewPrivs')]
        print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], nnp[0].split()[1], file=sys.stderr)
        raise SystemExit(3)
    """,
        data,
        marker,
        nofile=200,
    )
    assert r.status is ExecStatus.CRASH and r.exit_code == 3 and r.layer == layer.layer
    expected_data = DATA_MOUNT if layer is BwrapSandbox else str(data.resolve())
    assert r.stdout_tail == f"{d} {expected_data} ['train.csv']\n"
    assert r.stderr_tail == "200 1\n"  # the fd limit, and no_new_privs is set


def test_environment_is_exactly_the_given_one(node, monkeypatch):
    d, data, marker = node
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-77")
    env = safe_env(cwd=d, extra={"MLGUILD_SEED": "5", "MLGUILD_TEST_MARKER": marker})
    (d / "script.py").write_text("import json, os; print(json.dumps(dict(os.environ)))")
    r = BwrapSandbox().run([sys.executable, "script.py"], d, env, Limits(), d / "o.txt", d / "e.txt", data_dir=data)
    seen = json.loads(r.stdout_tail)
    # the layer rewrites the two paths it owns; bwrap adds PWD as a shell would
    assert seen == {**env, "MLGUILD_DATA": DATA_MOUNT, "TMPDIR": "/tmp", "PWD": str(d)}


def test_only_the_working_directory_is_writable(node):
    d, data, marker = node
    r = run(
        BwrapSandbox(),
        d,
        f"""
        import os
        for target in ['/usr/x', '/etc/x', '/data/x', '/x', '/proc/sys/kernel/x',
                       {str(d.parent)!r} + '/x']:
            try:
                open(target, 'w').write('x')
                print('WROTE', target)
            except OSError:
                pass
        open('here.txt', 'w').write('x'); open('/tmp/t', 'w').write('x')
        import socket
        print('shadow' in os.listdir('/etc'), os.path.exists('/etc/ssh'), socket.gethostname())
        print(os.path.exists({str(d.parent.parent / "sealed")!r}), os.listdir({str(d.parent)!r}))
    """,
        data,
        marker,
    )
    assert r.status is ExecStatus.OK, r.stderr_tail
    assert "WROTE" not in r.stdout_tail and (d / "here.txt").exists()
    assert r.stdout_tail.splitlines() == ["False False sandbox", "False ['n1']"]


def test_a_bind_that_would_expose_the_run_is_refused(node, tmp_path):
    d, data, marker = node
    sandbox = BwrapSandbox(extra_ro_binds=(str(tmp_path / "run"), str(tmp_path)))
    r = run(sandbox, d, "import os; print(os.path.exists('../../sealed/answers.csv'))", data, marker)
    assert r.stdout_tail == "False\n" and "not mounted" in r.notes
    assert str(tmp_path / "run") in r.notes


def test_term_grace_reaches_the_script_inside_the_namespace(node):
    d, data, marker = node
    t0 = time.monotonic()
    r = run(
        BwrapSandbox(),
        d,
        """
        import signal, sys, time
        def bye(*_):
            open('cleaned-up', 'w').write('yes'); sys.exit(0)
        signal.signal(signal.SIGTERM, bye)
        time.sleep(1000)
    """,
        data,
        marker,
        timeout_s=1,
        term_grace_s=2,
    )
    assert r.status is ExecStatus.TIMEOUT and (d / "cleaned-up").exists()
    assert time.monotonic() - t0 < 1 + 1.5  # it left on SIGTERM, well before the SIGKILL


def test_signal_death_is_reported_as_such(node):
    d, data, marker = node
    r = run(BwrapSandbox(), d, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", data, marker)
    assert r.status is ExecStatus.CRASH and r.signal == signal.SIGSEGV and r.exit_code is None


def test_gpu_passthrough_is_optional():
    off = BwrapSandbox(gpu=False)
    assert off.devices() == []
    args, _ = off._command(["true"], Path("/tmp"), {}, Limits(), None, None)
    assert "--dev-bind" not in args and "/sys" not in args
    auto = BwrapSandbox()
    args, _ = auto._command(["true"], Path("/tmp"), {}, Limits(), None, None)
    for dev in auto.devices():  # on a GPU machine: every device node passed through
        assert args[args.index(dev) - 1] == "--dev-bind"


@pytest.mark.skipif(not IS_ROOT, reason="the uid drop is only attempted as root")
def test_unreadable_data_means_no_drop_and_a_note(node):
    d, data, marker = node
    data.chmod(0o700)
    r = run(BwrapSandbox(), d, "import os; print(os.getuid(), os.listdir('/data'))", data, marker)
    assert r.status is ExecStatus.OK and r.stdout_tail == "0 ['train.csv']\n"
    assert r.run_uid == 0 and "not readable by other users" in r.notes


def test_honest_ml_script_works_inside(node):
    d, data, marker = node
    r = run(
        BwrapSandbox(),
        d,
        """
        import multiprocessing as mp, os
        import numpy as np, pandas as pd
        from joblib import Parallel, delayed
        if __name__ == '__main__':
            df = pd.read_csv(os.path.join(os.environ['MLGUILD_DATA'], 'train.csv'))
            squares = Parallel(n_jobs=2)(delayed(pow)(i, 2) for i in range(4))
            with mp.get_context('fork').Pool(2) as pool:
                doubled = pool.map(abs, [-1, -2])
            os.makedirs('output', exist_ok=True)
            df.assign(p=np.float64(0.5)).to_csv('output/holdout.csv', index=False)
            print(len(df), squares, doubled)
    """,
        data,
        marker,
        timeout_s=60,
    )
    assert r.status is ExecStatus.OK, r.stderr_tail
    assert r.stdout_tail == "1 [0, 1, 4, 9] [1, 2]\n" and (d / "output" / "holdout.csv").exists()
    assert "serial mode" not in r.stderr_tail  # joblib found working semaphores in /dev/shm


@pytest.mark.skipif(
    not IS_ROOT or not os.path.exists("/usr/bin/python3"),
    reason="needs root to start an agent as uid 65534 with the system python",
)
def test_unprivileged_agent_gets_a_user_namespace():
    # The non-root path of the layer: bwrap makes a user namespace (and forbids nested
    # ones); no uid switch is needed because the agent is already unprivileged.
    nobody = {"user": 65534, "group": 65534, "extra_groups": []}
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(SRC_DIR)}
    check = subprocess.run(
        ["/usr/bin/python3", "-c", "import mlguild.sandbox"],
        env=env,
        capture_output=True,
        cwd="/",
        check=False,
        **nobody,
    )
    if check.returncode != 0:
        pytest.skip(f"uid 65534 cannot import the package here: {check.stderr[-200:]!r}")
    work = Path(tempfile.mkdtemp(prefix="mlguild-unpriv-"))
    try:
        os.chown(work, 65534, 65534)
        agent = textwrap.dedent(f"""
            import json, sys
            from pathlib import Path
            from mlguild.sandbox import Limits, get_sandbox, safe_env
            from mlguild.sandbox.bwrap import probe
            if not probe()[0]:
                print(json.dumps({{"skip": probe()[1]}})); sys.exit()
            d = Path({str(work)!r})
            (d / "s.py").write_text("import os; print(os.getuid(), os.getpid(), os.listdir('/'))")
            r = get_sandbox("bwrap").run(["/usr/bin/python3", "s.py"], d, safe_env(cwd=d),
                                         Limits(timeout_s=20), d / "o.txt", d / "e.txt")
            print(json.dumps(r.to_dict()))
        """)
        done = subprocess.run(
            ["/usr/bin/python3", "-c", agent], env=env, capture_output=True, cwd="/", timeout=60, check=False, **nobody
        )
        out = json.loads(done.stdout.decode().strip().splitlines()[-1])
        if "skip" in out:
            pytest.skip(f"unprivileged bubblewrap unusable here: {out['skip']}")
        assert out["status"] == "ok" and out["run_uid"] == 65534, out
        uid, pid, _ = out["stdout_tail"].split(" ", 2)
        assert uid == "65534" and pid == "2"  # own PID namespace
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)
