import json
import random
import signal
import subprocess
import sys
import time

import pytest

from mlguild.core.errors import JournalCorrupt
from mlguild.core.vocabulary import FailureKind, Op, Status
from mlguild.rundir.journal import Journal, read_journal
from mlguild.rundir.records import Outcome, record_finished
from mlguild.rundir.replay import replay

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


def test_a_journal_written_before_the_vocabulary_replays_to_its_members(tmp_path):
    # Records as a run wrote them before events, ops and statuses were StrEnums: plain JSON
    # strings. They read back equal, and the graph holds members again.
    lines = [
        {"type": "run_started", "scorer_sha256": "abc"},
        {"type": "session_started", "resumed": False, "session_elapsed_s": 0.0},
        {
            "type": "node_started",
            "node": {
                "id": "n0001",
                "op": "draft",
                "parents": [],
                "iteration": 0,
                "plan": "p",
                "meta": {"recipe": "lightgbm"},
            },
        },
        {"type": "node_finished", "id": "n0001", "status": "scored", "score": 0.8},
        {"type": "node_started", "node": {"id": "n0002", "op": "debug", "parents": ["n0001"], "iteration": 1}},
        {"type": "node_finished", "id": "n0002", "status": "crash", "score": None, "failure": "boom"},
        {"type": "best_changed", "id": "n0001", "score": 0.8, "session_elapsed_s": 12.5},
        {"type": "move_skipped", "op": "blend", "parents": [], "reason": "no ids", "fix": ""},
        {"type": "session_ended", "reason": "budget: iterations", "session_elapsed_s": 20.0},
    ]
    path = tmp_path / "journal.jsonl"
    path.write_text("".join(json.dumps({"v": 1, "seq": i, "ts": 0.0, **r}) + "\n" for i, r in enumerate(lines)))
    state = replay(read_journal(path), "maximize")
    draft, debug = state.graph["n0001"], state.graph["n0002"]
    assert (draft.op, draft.status, debug.op, debug.status) == (Op.DRAFT, Status.SCORED, Op.DEBUG, FailureKind.CRASH)
    assert all(isinstance(v, Op | Status | FailureKind) for v in (draft.op, draft.status, debug.op, debug.status))
    assert state.best_id == "n0001" and state.scorer_fingerprint == "abc" and state.spent_s == 20.0
    assert state.unavailable == {"blend": "no ids"} and state.finished_reason == "budget: iterations"
    # What a writer appends now is the same line a run wrote then.
    with Journal(tmp_path / "new.jsonl") as journal:
        record_finished(journal, debug, Outcome(FailureKind.CRASH, failure="boom"))
    written = json.loads((tmp_path / "new.jsonl").read_text())
    assert written["type"] == "node_finished" and written["status"] == "crash" and type(written["status"]) is str


def test_nodes_started_out_of_order_replay_in_the_order_their_ids_were_reserved(tmp_path):
    # Two workers: n0002's script started before n0001's (whose proposal was asked again). The
    # live graph holds them as reserved, and so must the replay a resume starts from.
    started = [
        {"type": "node_started", "node": {"id": f"n{k:04d}", "op": "draft", "parents": [], "iteration": k - 1}}
        for k in (2, 1, 10, 3)
    ]
    path = tmp_path / "journal.jsonl"
    path.write_text("".join(json.dumps({"v": 1, "seq": i, "ts": 0.0, **r}) + "\n" for i, r in enumerate(started)))
    assert [n.id for n in replay(read_journal(path), "maximize").graph] == ["n0001", "n0002", "n0003", "n0010"]
