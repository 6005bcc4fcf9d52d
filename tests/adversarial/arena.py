"""A fake run directory, a sacrificial "agent", loopback listeners: what attacks aim at.

Nothing here is the real harness: the scorer is a copy-like fake, the "agent" is a
sleeping process with an API key in its environment, and the listeners only record what
reaches them. Attacks prove success by printing a secret (the canary) or "PWNED", by
changing a file, by killing the victim, or by reaching a listener.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

MNT_DETACH = 2


def survivors(marker: str) -> list[int]:
    """Live (non-zombie) processes with ``marker`` in their command line or environment."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            blob = Path(f"/proc/{name}/cmdline").read_bytes()
            blob += Path(f"/proc/{name}/environ").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in blob and state != b"Z":
            found.append(int(name))
    return found


def kill_all(marker: str, limit_s: float = 10.0) -> None:
    """SIGSTOP then SIGKILL every survivor until none is left (a fork loop cannot win)."""
    end = time.monotonic() + limit_s
    while (left := survivors(marker)) and time.monotonic() < end:
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in left:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")


def sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def mountpoints_under(root: Path) -> list[str]:
    """Mount points at or below ``root`` in our mount namespace, deepest first."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point == str(root) or point.startswith(str(root) + "/"):
            out.append(point)
    return sorted(out, key=len, reverse=True)


def detach(point: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(point.encode(), MNT_DETACH)


class Listeners:
    """TCP, UDP (also answering as DNS) and abstract-unix listeners on the host loopback,
    recording every byte that reaches them, in one background thread."""

    def __init__(self, marker: str):
        self.received: list[tuple[str, bytes]] = []
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.dns.bind(("127.0.0.1", 0))
        self.unix_name = f"mlguild-adv-{marker}"
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + self.unix_name)
        self.unix.listen(8)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def ports(self) -> dict[str, str]:
        return {
            "A_TCP": str(self.tcp.getsockname()[1]),
            "A_UDP": str(self.udp.getsockname()[1]),
            "A_DNS": str(self.dns.getsockname()[1]),
            "A_UNIX": self.unix_name,
        }

    def _serve(self) -> None:
        socks = [self.tcp, self.udp, self.dns, self.unix]
        while not self.stop.is_set():
            ready, _, _ = select.select(socks, [], [], 0.05)
            for s in ready:
                if s in (self.tcp, self.unix):
                    conn, _ = s.accept()
                    conn.settimeout(0.5)
                    try:
                        data = conn.recv(4096)
                    except OSError:
                        data = b""
                    self.received.append(("tcp" if s is self.tcp else "unix", data or b"<connected>"))
                    conn.close()
                else:
                    data, peer = s.recvfrom(4096)
                    self.received.append(("dns" if s is self.dns else "udp", data))
                    if s is self.dns and len(data) > 12:  # answer: same id, a reply flag
                        s.sendto(data[:2] + b"\x81\x80" + data[4:], peer)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        for s in (self.tcp, self.udp, self.dns, self.unix):
            s.close()


@dataclass
class Arena:
    """The fake run layout of one test, and everything an attack might reach."""

    root: Path
    canary: str = field(default_factory=lambda: f"CANARY-{uuid.uuid4().hex}")
    marker: str = field(default_factory=lambda: f"advmark{uuid.uuid4().hex[:12]}")

    def __post_init__(self):
        self.run = self.root / "run"
        self.sealed = self.run / "sealed" / "holdout_answers.csv"
        self.journal = self.run / "journal.jsonl"
        self.data = self.run / "workspace" / "data"
        self.node = self.run / "nodes" / "n0001"
        self.scorer = self.root / "src" / "mlguild" / "scorer.py"  # a fake, never the real one
        self.hidden = self.root / "hidden"  # a mount the local umount attack may target
        for d in (self.sealed.parent, self.data, self.node, self.scorer.parent, self.run / "best"):
            d.mkdir(parents=True, exist_ok=True)
        self.sealed.write_text(f"id,label\nr1,{self.canary}\n")
        # what the firewall should do (see the report): sealed is the agent's alone
        self.sealed.chmod(0o600)
        self.sealed.parent.chmod(0o700)
        self.journal.write_text('{"event": "run_started"}\n')
        self.scorer.write_text("def score(y, p):\n    return 0.0\n")
        (self.data / "train.csv").write_text("id,x\nr1,1\n")
        (self.data / "train.csv").chmod(0o444)
        self.data.chmod(0o555)
        self.shm = Path(f"/dev/shm/mlguild-adv-{self.marker}-secret")
        self.shm.write_text(self.canary)
        self.shm.chmod(0o600)
        self.victim = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)", f"victim-{self.marker}"],
            env={"PATH": os.defpath, "OPENAI_API_KEY": self.canary},
            cwd=self.run,
        )
        self.listeners = Listeners(self.marker)
        self.mounted = False

    def mount_hidden(self) -> None:
        """Root only: a tmpfs the umount attack of the local layer may try to remove."""
        self.hidden.mkdir(exist_ok=True)
        libc = ctypes.CDLL(None, use_errno=True)
        self.mounted = libc.mount(b"none", str(self.hidden).encode(), b"tmpfs", 0, None) == 0

    def protected(self) -> dict[str, str | None]:
        """Hashes of every file an attack must not change, and the run's file list."""
        files = [self.sealed, self.journal, self.scorer, self.data / "train.csv", self.node / "solution.py"]
        out = {str(p): sha(p) for p in files}
        listing = sorted(
            str(p)
            for p in self.run.rglob("*")
            if self.node not in p.parents and p != self.node and self.sealed.parent not in p.parents
        )
        out["<run listing>"] = hashlib.sha256("\n".join(listing).encode()).hexdigest()
        return out

    def env(self, layer_targets: str) -> dict[str, str]:
        """What attacks are told: every path and port they could need (knowing them is
        not the attack; reaching them is)."""
        return {
            "A_SEALED": str(self.sealed),
            "A_RUN": str(self.run),
            "A_SCORER": str(self.scorer),
            "A_JOURNAL": str(self.journal),
            "A_VICTIM": str(self.victim.pid),
            "A_SHM": self.shm.name,
            "A_MOUNT_TARGETS": layer_targets,
            "MLGUILD_TEST_MARKER": self.marker,
            **self.listeners.ports(),
        }

    def close(self) -> None:
        kill_all(self.marker)
        self.victim.kill()
        self.victim.wait()
        self.listeners.close()
        for point in mountpoints_under(self.root):
            detach(point)
        for d in ("/tmp", "/dev/shm"):
            for name in os.listdir(d):
                if self.marker in name:
                    try:
                        os.unlink(os.path.join(d, name))
                    except OSError:
                        pass
