"""The library entry (mlguild.launch.start / resume), driven as docs/guides/export.md shows it."""

from __future__ import annotations

from conftest import make_task

from mlguild.config import load_config
from mlguild.launch import Finished, resume, start
from mlguild.rundir.folder import RunDir


def test_start_runs_a_task_to_its_final_choice_and_resume_continues_it(tmp_path):
    said: list[str] = []
    events: list[str] = []
    config = load_config(None, ["budget.iterations=3", "brain.name=scripted"])  # as --dry-run sets it
    done = start(
        make_task(tmp_path / "task"),
        config,
        runs_dir=tmp_path / "runs",
        dry_run=True,
        say=lambda line, warning: said.append(line),
        on_event=lambda kind, data: events.append(kind),
    )
    assert isinstance(done, Finished)
    assert done.stop.finished and done.searched == 3 and done.best is not None
    assert done.finish.choice is not None and (done.run.path / "final" / "submission.csv").is_file()
    assert done.finish.grade is not None  # the task has test answers: graded once
    done.check()  # a dry run is not judged on learning
    assert any(line.startswith("run   ") for line in said) and any(line.startswith("brain ") for line in said)
    assert events.count("node_finished") == 3 and events[-1] == "session_ended"

    more = resume(done.run.path, ["budget.iterations=5"])
    assert more.searched == 5 and more.stop.finished


def test_start_without_launch_returns_the_run_folder_with_its_brief(tmp_path):
    run = start(make_task(tmp_path / "task"), load_config(None, []), runs_dir=tmp_path / "runs", launch=False)
    assert isinstance(run, RunDir)
    assert (run.path / "brief.md").is_file() and not any((run.path / "nodes").iterdir())


def test_a_dry_run_community_cycle_node_stops_refining_after_one_refine_request(tmp_path):
    # The stand-in answers the refine request DONE: one working step, no refinement, and no
    # report of its own (the harness's stands); before, every node refined until its time limit.
    sets = ["budget.iterations=1", "brain.name=llm", "brain.cycle=community", "final.reference_models=false"]
    done = start(make_task(tmp_path / "task"), load_config(None, sets), runs_dir=tmp_path / "runs", dry_run=True)
    assert isinstance(done, Finished)
    records = done.run.journal.records
    (started,) = [r["node"] for r in records if r["type"] == "node_started" and r["node"]["op"] == "draft"]
    assert started["meta"]["cycle"] == "community"
    steps = done.run.node_dir(started["id"]) / "steps"
    assert sorted(p.name for p in steps.iterdir()) == ["01"]  # one step, refined by nobody
    assert not [r for r in records if r["type"] == "node_step"]
    (finished,) = [r for r in records if r["type"] == "node_finished" and r["id"] == started["id"]]
    assert finished["status"] == "scored"
    (report,) = [r for r in records if r["type"] == "node_report"]
    assert report["author"] == "harness" and "not a report" in report["failure"]
