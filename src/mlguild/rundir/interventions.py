"""Every human touch of a run, journaled with its time and what it changed.

A run is meant to work unattended, and a reader of its numbers needs to know how unattended
it was: each time a person stepped in is an ``intervention`` record: a resume, settings
changed on it (``--set``), ``brief.md`` or ``config.yaml`` edited between sessions, a node's
``solution.py`` edited by hand, the task's ``knowledge/`` changed (``mlguild knowledge add``)
while the run was stopped, and a Ctrl-C. Edits are found by fingerprints: the harness
journals the hashes of the files it watches whenever it writes them itself or a session
starts or ends (``watched``), and a resume compares the files with the last of these.
``autonomy`` sums it up for ``mlguild status`` and the report.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..core.graph import SearchGraph
from ..core.vocabulary import Event, Op
from ..util.fs import sha256_file
from . import events
from .folder import RunDir

WATCHED_FILES = ("brief.md", "config.yaml")


def _sha(path: Path) -> str:
    try:
        return sha256_file(path)
    except OSError:
        return ""


def _knowledge_sha(run_path: Path) -> str:
    """One hash over the task's knowledge items (names and contents), "" without any."""
    try:
        root = Path(json.loads((run_path / "task.json").read_text())["root"])
    except (OSError, ValueError, KeyError):
        return ""
    folder = root / "knowledge"
    if not folder.is_dir():
        return ""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(_sha(path).encode())
    return digest.hexdigest()


def fingerprint(run_path: Path) -> dict[str, str]:
    """The hashes of the files a person may edit between sessions."""
    found = {name: _sha(run_path / name) for name in WATCHED_FILES}
    found["knowledge"] = _knowledge_sha(run_path)
    return found


def mark_seen(run: RunDir) -> None:
    """Journal the watched files as the harness leaves them (after it wrote one itself)."""
    events.watched(run.journal, fingerprint(run.path))


def _last_seen(records: list[dict[str, Any]]) -> dict[str, str]:
    seen: dict[str, str] = {}
    for rec in records:
        if rec["type"] in (Event.WATCHED, Event.SESSION_STARTED, Event.SESSION_ENDED) and rec.get("fingerprint"):
            seen.update(rec["fingerprint"])
    return seen


def on_resume(run: RunDir, graph: SearchGraph, overrides: list[str]) -> list[dict[str, Any]]:
    """Journal the interventions a resume finds (before it changes anything): the resume
    itself, its settings, files edited since the harness last saw them, hand-edited node
    scripts. Returns the records written."""
    found: list[dict[str, Any]] = [{"kind": "resume", "what": "the run was resumed"}]
    if overrides:
        found.append({"kind": "settings", "what": "settings changed on resume: " + ", ".join(overrides)})
    seen, now = _last_seen(run.journal.records), fingerprint(run.path)
    for name, sha in now.items():
        if name in seen and seen[name] != sha:
            what = "the task's knowledge/ changed" if name == "knowledge" else f"{name} was edited"
            found.append({"kind": "edited", "file": name, "what": what})
    for node in graph:
        if node.finished and node.code_sha256 and node.op != Op.REFIT:
            on_disk = _sha(run.node_dir(node.id) / "solution.py")
            if on_disk and on_disk != node.code_sha256:
                found.append({"kind": "edited", "file": f"nodes/{node.id}/solution.py",
                              "what": f"{node.id}'s solution.py was edited by hand"})  # fmt: skip
    for touch in found:
        events.intervention(run.journal, **touch)
    return found


def interrupted(run: RunDir, elapsed_s: float) -> None:
    events.intervention(run.journal, "interrupt", "Ctrl-C stopped the run", elapsed_s)


def autonomy(records: list[dict[str, Any]], graph: SearchGraph, spent_s: float) -> dict[str, Any]:
    """How unattended the run has been: its interventions, the search nodes and the hours of
    search since the last one, and interventions per hour of search."""
    touches = [r for r in records if r["type"] == Event.INTERVENTION]
    searched = [n for n in graph if n.op not in (Op.REFIT, Op.EDA)]
    since_nodes, since_s = len(searched), spent_s
    if touches:
        last_seq = touches[-1].get("seq", 0)
        started = {r["node"]["id"]: r.get("seq", 0) for r in records if r["type"] == Event.NODE_STARTED}
        since_nodes = sum(1 for n in searched if started.get(n.id, 0) > last_seq)
        since_s = session = 0.0  # the search time after the last intervention, session by session
        for rec in records:
            if rec.get("seq", 0) <= last_seq:
                continue
            if rec["type"] == Event.SESSION_STARTED:
                since_s, session = since_s + session, 0.0
            if "session_elapsed_s" in rec:
                session = max(session, float(rec["session_elapsed_s"]))
        since_s += session
    hours = spent_s / 3600
    return {
        "interventions": len(touches),
        "kinds": [t["kind"] for t in touches],
        "nodes_since_last": since_nodes,
        "hours_since_last": round(since_s / 3600, 3),
        "per_hour": round(len(touches) / hours, 2) if hours > 0 else None,
    }
