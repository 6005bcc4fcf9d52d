import json
import random
import signal
import subprocess
import sys
import time

import pytest

from mlguild.core.errors import JournalCorrupt
from mlguild.rundir.journal import Journal, read_journal

WRITER = """
import sys
from mlguild.rundir.journal import Journal
j = Journal(sys.argv[1])
start = int(sys.argv[2])
for i in range(start, start + 100000):
    j.append("tick", i=i, pad="x" * (i % 700))
    print(i, flush=True)
"""


def test_append_and_reopen(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as j:
        j.append("a", x=1)
        j.append("b", y=[1, 2])
    with Journal(path) as j:
        assert [r["type"] for r in j.records] == ["a", "b"]
        rec = j.append("c")
        assert rec["seq"] == 2 and rec["v"] == 1
    assert [r["seq"] for r in read_journal(path)] == [0, 1, 2]


def test_torn_last_line_is_repaired(tmp_path):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as j:
        j.append("a")
        j.append("b")
    with open(path, "ab") as fh:
        fh.write(b'{"v":1,"seq":2,"type":"tor')
    assert len(read_journal(path)) == 2  # reading does not modify
    with Journal(path) as j:
        assert len(j.records) == 2
        j.append("c")
    lines = path.read_text().splitlines()
    assert [json.loads(x)["type"] for x in lines] == ["a", "b", "c"]


def test_corrupt_middle_line_is_reported(tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_text('{"v":1,"seq":0,"type":"a"}\nnot json at all\n{"v":1,"seq":2,"type":"c"}\n')
    with pytest.raises(JournalCorrupt) as info:
        Journal(path)
    assert "line 2" in str(info.value) and "sed -n 2p" in str(info.value)


def test_sigkill_at_random_points_loses_no_acknowledged_record(tmp_path):
    """A writer killed with SIGKILL at random moments, many times over one file: every record
    it acknowledged (printed after append returned) is there, in order, and the file stays readable."""
    path = tmp_path / "journal.jsonl"
    rng = random.Random(7)
    acked: list[int] = []
    next_i = 0
    for _ in range(40):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(next_i)], stdout=subprocess.PIPE, text=True
        )
        first = proc.stdout.readline()  # the writer is up and has acknowledged one record
        assert first.strip()
        acked.append(int(first))
        time.sleep(rng.uniform(0, 0.03))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        acked.extend(int(x) for x in out.split())
        records = Journal(path).records  # repairs a torn tail, raises on corruption
        seen = [r["i"] for r in records]
        assert set(acked) <= set(seen)
        assert [r["seq"] for r in records] == list(range(len(records)))
        next_i = max(seen) + 1
    assert len(acked) > 40
