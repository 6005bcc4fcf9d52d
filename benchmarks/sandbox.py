"""Sandbox layer benchmarks (issue: hardened sandbox). Run by hand, report the figures:

    .venv/bin/python benchmarks/sandbox.py [--runs 30] [--trials 20] [--no-prestart]

1. Start-to-first-line: from calling ``run()`` to the script's first printed line, for a
   bare ``subprocess`` start (the floor), the always-on layer and the namespace layer.
   The overhead of a layer is its time minus the floor. Target: namespace layer <= 50 ms
   (median and p90 of --runs runs). Runs follow each other as an agent's do, so each finds
   the supervisor its layer started ahead; --no-prestart starts every supervisor on
   demand (a run after the sandbox was idle, killed or just created).
2. Kill latency after a timeout: from the wall-clock deadline to ``run()`` returning with
   every descendant reaped, for a script that obeys SIGTERM and one whose whole tree
   (including a setsid daemon) ignores it (default grace 1 s). Target: < 2 s at p99 of
   --trials trials. Survivors are counted after each trial (by an environment marker).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from mlguild.sandbox import BwrapSandbox, Limits, LocalSandbox, safe_env
from mlguild.sandbox.bwrap import probe

FIRST_LINE = "import time; print(time.time(), flush=True)\n"
OBEYS_TERM = "import time; time.sleep(1000)\n"
IGNORES_TERM = """
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for i in range(3):
    if os.fork() == 0:
        if i == 2:
            os.setsid()
            os.fork()
        break
while True:
    time.sleep(0.05)
"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def marked(marker: str) -> int:
    """Live processes whose environment or command line holds ``marker``."""
    n = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                blob = Path(f"/proc/{name}/environ").read_bytes()
                blob += Path(f"/proc/{name}/cmdline").read_bytes()
                state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            n += marker.encode() in blob and state != b"Z"
    return n


def first_line_bare(d: Path) -> float:
    t0 = time.time()
    out = subprocess.run(
        [sys.executable, "script.py"], cwd=d, env=safe_env(cwd=d), capture_output=True, check=True
    ).stdout
    return float(out.split()[0]) - t0


def first_line(sandbox, d: Path) -> float:
    t0 = time.time()
    r = sandbox.run(
        [sys.executable, "script.py"],
        d,
        safe_env(cwd=d),
        Limits(timeout_s=30),
        d / "o.txt",
        d / "e.txt",
        data_dir=d.parent / "data",
    )
    return float(r.stdout_tail.split()[0]) - t0


def kill_latency(sandbox, d: Path, code: str, trials: int) -> tuple[list[float], int]:
    (d / "script.py").write_text(code)
    limits = Limits(timeout_s=0.5, term_grace_s=1.0)
    lat, left = [], 0
    for _ in range(trials):
        marker = f"benchmark{uuid.uuid4().hex}"
        env = safe_env(cwd=d, extra={"MLGUILD_TEST_MARKER": marker})
        t0 = time.monotonic()
        sandbox.run([sys.executable, "script.py"], d, env, limits, d / "o.txt", d / "e.txt")
        lat.append(time.monotonic() - t0 - limits.timeout_s)
        left += marked(marker)
    return lat, left


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--no-prestart", action="store_true", help="start each run's supervisor on demand, not ahead")
    args = ap.parse_args()
    prestart = not args.no_prestart
    layers = {"local": LocalSandbox(prestart=prestart)}
    usable, why = probe()
    if usable:
        layers["bwrap"] = BwrapSandbox(prestart=prestart)
    else:
        print(f"namespace layer skipped: {why}")
    with tempfile.TemporaryDirectory(prefix="mlguild-bench-") as tmp:
        Path(tmp).chmod(0o755)  # reachable by the dropped uid, as a run directory is
        d = Path(tmp) / "node"
        d.mkdir(mode=0o755)
        (Path(tmp) / "data").mkdir(mode=0o755)
        (d / "script.py").write_text(FIRST_LINE)
        for _ in range(3):  # warm caches and the layers' one-time probes
            first_line_bare(d)
            for s in layers.values():
                first_line(s, d)
        bare = [first_line_bare(d) for _ in range(args.runs)]
        floor = statistics.median(bare)
        print(f"\nstart-to-first-line, {args.runs} runs (ms)")
        print(f"{'':16}{'median':>8}{'p90':>8}{'overhead (median)':>20}{'(p90)':>8}")
        print(f"{'bare subprocess':16}{floor * 1e3:8.1f}{pct(bare, 0.9) * 1e3:8.1f}")
        for name, s in layers.items():
            t = [first_line(s, d) for _ in range(args.runs)]
            med, p90 = statistics.median(t), pct(t, 0.9)
            print(f"{name:16}{med * 1e3:8.1f}{p90 * 1e3:8.1f}{(med - floor) * 1e3:20.1f}{(p90 - floor) * 1e3:8.1f}")
        print(f"\nkill latency after timeout, {args.trials} trials, grace 1 s (s)")
        print(f"{'':24}{'p50':>7}{'p99':>7}{'max':>7}{'survivors':>11}")
        for name, s in layers.items():
            for label, code in (("obeys SIGTERM", OBEYS_TERM), ("ignores SIGTERM", IGNORES_TERM)):
                lat, left = kill_latency(s, d, code, args.trials)
                print(f"{name + ', ' + label:24}{pct(lat, 0.5):7.3f}{pct(lat, 0.99):7.3f}{max(lat):7.3f}{left:11d}")


if __name__ == "__main__":
    main()
