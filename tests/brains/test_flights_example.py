"""The bundled example with lookup tables (issue 37), ``flights``: a whole run of the recipe
brain and the final stage, the real sandbox and scorer, ends in a valid final submission from a
script that joined the tables, and whose model used their columns."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mlguild.brains import get_brain
from mlguild.config import load_config
from mlguild.final.stage import finish
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.sources.examples import build_example
from mlguild.task.folder import load_task


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_flights_example_runs_to_a_valid_final_submission_from_a_script_that_joins_its_tables(tmp_path):
    cfg = load_config(None, ["budget.iterations=2", "budget.time_s=300", "sandbox.script_timeout_s=200"])
    run = create_run(load_task(build_example("flights", tmp_path / "flights")), cfg, tmp_path / "runs")
    agent = Agent(open_session(run, get_brain("recipes"), get_sandbox(cfg.sandbox.kind)))
    done = finish(agent.session, agent.run_loop())
    assert done.choice is not None and done.grade["valid"]
    agent.session.scorers.test.validate(run.path / "final" / "submission.csv")

    script = (run.path / "final" / "solution.py").read_text()
    for table in ("planes.csv", "weather.csv", "airports.csv"):
        assert f"'file': {table!r}" in script
    final = json.loads((run.path / "final" / "final.json").read_text())
    node = run.path / "nodes" / final["node"]
    out = (node / "stdout.txt").read_text()
    assert "joined weather.csv on ['origin', 'time_hour'] (one-to-one)" in out
    assert "joined airports.csv on ['dest'] (one-to-one)" in out
    used = set()  # the columns the models of the run split on or weighted
    for path in run.path.glob("nodes/*/output/importance.csv"):
        used |= set(pd.read_csv(path).query("importance > 0")["feature"])
    assert {"weather_pressure", "weather_visib", "planes_seats", "airports_alt"} <= used, sorted(used)
    run.close()
