"""The confirmation split: sealed like the holdout, hidden among its rows, scored once after
the search (the journal proves it), and shown beside the holdout score of the choice."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import make_task, mlguild

from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import FirewallConfig, load_config
from mlguild.core.protocols import Proposal
from mlguild.final.stage import final_base, finish
from mlguild.firewall.confirm import CONFIRM_ANSWERS, held_answers
from mlguild.firewall.verifier import verify_workspace
from mlguild.firewall.workspace import HOLDOUT_INPUTS, HOLDOUT_SAMPLE, build_workspace
from mlguild.launch import Finished, resume, start
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.rundir.replay import replay
from mlguild.sandbox import get_sandbox
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task
from mlguild.util.exact_csv import read_csv_exact

# A logistic curve on x0 with seeded noise: every seed a different, honest score. It writes
# a prediction for every row of the holdout inputs file, as the script contract says, and
# records how many labelled rows it trained on.
NOISY = """
import math, os
from pathlib import Path
import numpy as np
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
train = pd.read_csv(data / "train.csv", dtype={{"id": str}})
os.makedirs("output", exist_ok=True)
Path("output/rows.txt").write_text(str(len(train)))
rng = np.random.default_rng({seed})
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={{"id": str}})
    x = frame["x0"].to_numpy() + rng.normal(scale={noise}, size=len(frame))
    pd.DataFrame({{"id": frame["id"], "y": 1 / (1 + np.exp(-3 * x))}}).to_csv("output/" + dst, index=False)
"""


def _search(tmp_path, n_nodes: int):
    sets = [
        f"budget.iterations={n_nodes}",
        f"search.num_drafts={n_nodes}",
        "search.draft_every=0",
        "search.fuse_every=0",
        "search.evidence_reruns=0",
        "sandbox.script_timeout_s=60",
    ]
    cfg = load_config(None, sets)
    run = create_run(load_task(make_task(tmp_path / "task", n=2400)), cfg, tmp_path / "runs")
    scripts = [Proposal(f"noisy {i}", NOISY.format(seed=i, noise=0.4 + 0.1 * i), {}) for i in range(n_nodes)]
    agent = Agent(open_session(run, ScriptedBrain(scripts), get_sandbox("local")))
    return run, agent


def test_the_confirmation_score_is_computed_once_after_the_search_and_never_before(tmp_path):
    run, agent = _search(tmp_path, 8)
    session = agent.session
    held = session.executor.held
    assert held.confirm is not None and held.confirm_rows == run.workspace.manifest()["split"]["confirm_rows"] > 0
    # A spy on the one scorer that reads the confirmation labels: when was it asked?
    asked: list[int] = []
    scoring = held.confirm.score

    def spy(path):
        asked.append(sum(1 for r in run.journal.records if r["type"] == "node_finished"))
        return scoring(path)

    held.confirm.score = spy  # type: ignore[method-assign]
    stop = agent.run_loop()
    assert asked == []  # eight nodes scored on the holdout, none on the confirmation split
    done = finish(session, stop)
    assert asked and set(asked) == {8}  # only after the eighth and last search node

    records = read_journal(run.path / "journal.jsonl")
    kinds = [r["type"] for r in records]
    assert kinds.count("confirmation_scored") == 1
    at = kinds.index("confirmation_scored")
    search_nodes = [r for r in records if r["type"] == "node_started" and r["node"]["op"] != "refit"]
    assert len(search_nodes) == 8 and all(records.index(r) < at for r in search_nodes)
    assert all(r["node"]["op"] == "refit" for r in records[at:] if r["type"] == "node_started")
    confirmed = records[at]
    assert confirmed["after_nodes"] == 8 and confirmed["last_node"] == search_nodes[-1]["node"]["id"]
    assert session.state.best_id in confirmed["scores"] and "baseline" in confirmed["scores"]
    assert not any("confirm" in json.dumps(r) for r in records[:at])  # no earlier record names it

    # final.json: the holdout score of the choice beside its confirmation score.
    choice = json.loads((run.path / "final" / "final.json").read_text())
    assert choice == done.choice
    shown = choice["confirmation"]
    base = session.state.graph[choice["base"]]
    entry = confirmed["scores"][base.id]
    assert shown["node"] == base.id and shown["holdout_score"] == base.score == entry["holdout"]
    assert shown["confirm_score"] == entry["confirm"] and shown["confirm_rows"] == held.confirm_rows
    assert shown["selection_bias"] == round(entry["holdout"] - entry["confirm"], 6)  # AUC: larger is better
    low, high = shown["selection_bias_interval"]
    assert low < shown["selection_bias"] < high
    # The constant baseline is no better than chance there.
    assert abs(confirmed["scores"]["baseline"]["confirm"] - 0.5) < 1e-9

    # The refit, after it, trained on the confirmation rows too.
    split = run.workspace.manifest()["split"]
    if choice["refit"]:
        rows = int((run.node_dir(choice["node"]) / "output" / "rows.txt").read_text())
        assert rows == split["train_rows"] + split["holdout_rows"] + split["confirm_rows"]

    # A second finish (a resume with nothing new) scores nothing again; the replay keeps it.
    finish(session, stop)
    again = read_journal(run.path / "journal.jsonl")
    assert [r["type"] for r in again].count("confirmation_scored") == 1
    state = replay(again, "maximize")
    assert state.confirmation is not None and state.confirmation["scores"] == confirmed["scores"]


def test_scripts_cannot_tell_confirmation_rows_from_holdout_rows(tmp_path):
    task = load_task(make_task(tmp_path / "task", n=2400))
    ws = build_workspace(task, tmp_path / "run", FirewallConfig())
    assert verify_workspace(ws.run_dir, "id", ["y"]).ok
    inputs = read_csv_exact(ws.data_dir / HOLDOUT_INPUTS)
    sample = read_csv_exact(ws.data_dir / HOLDOUT_SAMPLE)
    confirm = read_csv_exact(ws.sealed_dir / CONFIRM_ANSWERS)
    holdout = read_csv_exact(ws.holdout_answers)
    # One inputs file, one sample, for both: the same columns for every row, in one order.
    assert sample["id"].tolist() == inputs["id"].tolist()
    assert len(inputs) == len(holdout) + len(confirm) and not set(holdout["id"]) & set(confirm["id"])
    # Shuffled together: the confirmation rows are spread over the whole file, not a block.
    at = np.flatnonzero(inputs["id"].isin(set(confirm["id"])).to_numpy())
    assert at[0] < len(inputs) * 0.1 and at[-1] > len(inputs) * 0.9
    # About as often adjacent as a random draw makes them: as often as their share of the rows.
    assert abs(float(np.mean(np.diff(at) == 1)) - len(confirm) / len(inputs)) < 0.1
    # No workspace file names or lists the confirmation rows apart.
    for path in ws.data_dir.rglob("*"):
        if path.is_file():
            assert "confirm" not in path.name and b"confirm" not in path.read_bytes()
    # The answers of every row of the inputs file, in its order, join back by position.
    assert held_answers(ws.data_dir, ws.holdout_answers, "id")["id"].tolist() == inputs["id"].tolist()


def test_the_confirmation_split_is_the_latest_rows_of_time_ordered_data(tmp_path):
    task = load_task(build_example("ridership", tmp_path / "ridership"))
    ws = build_workspace(task, tmp_path / "run", FirewallConfig())
    split = ws.manifest()["split"]
    assert split["kind"] == "time" and split["confirm_rows"] > 0
    column = task.spec.time_column
    train = pd.read_csv(task.train_path, dtype=str, keep_default_na=False).set_index("id")
    times = pd.to_datetime(train[column])
    held = read_csv_exact(ws.holdout_answers)["id"]
    confirm = read_csv_exact(ws.sealed_dir / CONFIRM_ANSWERS)["id"]
    fit = read_csv_exact(ws.data_dir / task.spec.train_file)["id"]
    # train, then the holdout, then the confirmation split: each as late as, or later than, the one before
    assert times[fit].max() <= times[held].min() and times[held].max() <= times[confirm].min()
    assert verify_workspace(ws.run_dir, "id", task.spec.target_columns).ok


def test_the_confirmation_split_takes_whole_groups_of_a_ranking(tmp_path):
    task = load_task(build_example("fishing", tmp_path / "fishing"))
    assert not task.spec.ids_unique
    key = task.spec.id_column
    ws = build_workspace(task, tmp_path / "run", FirewallConfig())
    confirm = read_csv_exact(ws.sealed_dir / CONFIRM_ANSWERS)
    holdout = read_csv_exact(ws.holdout_answers)
    fit = read_csv_exact(ws.data_dir / task.spec.train_file)
    groups = [set(frame[key]) for frame in (confirm, holdout, fit)]
    assert all(groups) and not groups[0] & groups[1] and not groups[0] & groups[2] and not groups[1] & groups[2]
    inputs = read_csv_exact(ws.data_dir / HOLDOUT_INPUTS)
    # Each group's rows stay together and in their order in the shuffled inputs file.
    for _, rows in inputs.groupby(key, sort=False):
        assert np.all(np.diff(rows.index.to_numpy()) == 1)
    answers = held_answers(ws.data_dir, ws.holdout_answers, key)
    assert answers[key].tolist() == inputs[key].tolist()
    assert answers[task.spec.key_columns].to_numpy().tolist() == inputs[task.spec.key_columns].to_numpy().tolist()


def test_a_task_too_small_for_a_confirmation_split_says_so(tmp_path):
    task = load_task(make_task(tmp_path / "task", n=400))
    ws = build_workspace(task, tmp_path / "run", FirewallConfig())
    split = ws.manifest()["split"]
    assert split["confirm_rows"] == 0 and not (ws.sealed_dir / CONFIRM_ANSWERS).exists()
    assert "too small for a confirmation split" in split["confirm_skipped"]
    assert "firewall.confirm_min_rows=150" in split["confirm_skipped"]


def test_a_run_too_small_for_a_confirmation_split_says_so_in_one_line_everywhere(tmp_path):
    """final.json, status and the report each say why there is no confirmation score, in one line."""
    config = load_config(None, ["budget.iterations=2", "brain.name=scripted", "sandbox.kind=local"])
    done = start(make_task(tmp_path / "task", n=400), config, runs_dir=tmp_path / "runs", dry_run=True)
    assert isinstance(done, Finished) and done.finish.choice is not None
    reason = done.run.workspace.manifest()["split"]["confirm_skipped"]
    assert done.finish.choice["confirmation"] == {"skipped": reason} and "\n" not in reason
    assert "a confirmation split needs at least as many to be the closer estimate" in reason
    status = mlguild("status", str(done.run.path), cwd=tmp_path, env={"COLUMNS": "400"})
    assert status.returncode == 0 and f"confirmation split: none ({reason})" in status.stdout
    assert mlguild("report", str(done.run.path), cwd=tmp_path).returncode == 0
    assert f"confirmation split: none ({reason})" in (done.run.path / "report.md").read_text()


@pytest.mark.parametrize("example", ["schools", "fishing", "movies"])
def test_every_shape_gets_its_confirmation_score(tmp_path, example):
    """Several targets, a grouped ranking (NDCG), ranked lists (MAP@k): the stand-in scripts of
    a dry run are scored on the confirmation split at the end, like any other task's."""
    config = load_config(
        None, ["budget.iterations=2", "brain.name=scripted", "firewall.confirm_min_rows=30", "sandbox.kind=local"]
    )
    done = start(build_example(example, tmp_path / example), config, runs_dir=tmp_path / "runs", dry_run=True)
    assert isinstance(done, Finished) and done.finish.choice is not None
    shown = done.finish.choice["confirmation"]
    assert shown["confirm_score"] is not None and shown["holdout_score"] is not None, shown
    assert shown["confirm_rows"] == done.run.workspace.manifest()["split"]["confirm_rows"] > 0


def test_a_run_made_before_the_confirmation_split_opens_reports_and_resumes(tmp_path):
    config = load_config(None, ["budget.iterations=2", "brain.name=scripted", "sandbox.kind=local"])
    done = start(make_task(tmp_path / "task", n=400), config, runs_dir=tmp_path / "runs", dry_run=True)
    assert isinstance(done, Finished)
    path = done.run.path
    # What such a run holds: no confirmation words in its manifest, final.json or journal.
    manifest = json.loads((path / "manifest.json").read_text())
    for key in ("confirm_rows", "confirm_skipped"):
        manifest["split"].pop(key)
    (path / "manifest.json").write_text(json.dumps(manifest))
    lines = []
    for line in (path / "journal.jsonl").read_text().splitlines():
        record = json.loads(line)
        record.pop("confirmation", None)
        lines.append(json.dumps(record))
    (path / "journal.jsonl").write_text("\n".join(lines) + "\n")
    status = mlguild("status", str(path), cwd=tmp_path)
    assert status.returncode == 0 and "final submission" in status.stdout and "confirmation" not in status.stdout
    assert mlguild("report", str(path), cwd=tmp_path).returncode == 0
    more = resume(path, ["budget.iterations=3"])
    assert more.searched == 3 and more.stop.finished


def test_a_tie_between_a_blend_and_the_best_node_is_settled_on_the_confirmation_split(tmp_path):
    run, agent = _search(tmp_path, 3)
    agent.run_loop()
    session = agent.session
    graph = session.state.graph
    best = graph[session.state.best_id]
    blend = next(n for n in graph.ranked() if n.id != best.id)
    blend.meta["fuse"] = [best.id]  # a blend of the best node alone: the same predictions, a tie
    output = lambda node: run.node_dir(node.id) / "output" / "holdout.csv"
    output(blend).chmod(0o644)
    output(blend).write_bytes(output(best).read_bytes())
    held = session.executor.held  # both files hold the confirmation rows too: compared on the holdout part
    for better, worse in ((blend, best), (best, blend)):
        confirmation = {"scores": {better.id: {"confirm": 0.9}, worse.id: {"confirm": 0.8}}}
        base, why = final_base(run, graph, session.scorers.holdout, best, confirmation, held)
        assert base.id == better.id and "on the confirmation split" in why
    # With no confirmation score, the tie goes to the blend, as before the split existed.
    assert final_base(run, graph, session.scorers.holdout, best, None, held)[0].id == blend.id
