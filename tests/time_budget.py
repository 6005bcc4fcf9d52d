"""The suite's time budget: ``tests/time_budget.json`` lists the measured seconds of every test
marked slow (and of any other test that took a few seconds when it was measured), and a
ceiling on their sum. ``test_time_budget.py`` checks, from the files alone (never from a
clock), that every slow test has an entry and that the sum stays under the ceiling, so a
new end-to-end test is measured before it lands and the suite cannot grow unnoticed.

``./scripts/test --write-time-budget`` (any selection; the whole suite to refresh every
entry) measures each test it runs (set-up, call and tear-down) and writes the entries of the
tests that ran, keeping the others; the ceiling is kept as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BUDGET_FILE = Path(__file__).with_name("time_budget.json")
LISTED_FROM_S = 3.0  # a test that is not marked slow is listed from this many seconds on


def load(path: Path = BUDGET_FILE) -> dict:
    return json.loads(path.read_text())


class Recorder:
    """Adds up each test's phases as their reports reach the controlling process (with
    pytest-xdist, the workers' reports come to it too)."""

    def __init__(self, path: Path = BUDGET_FILE) -> None:
        self.path = path
        self.seconds: dict[str, float] = {}
        self.slow: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        nodeid = plain_nodeid(report.nodeid)
        self.seconds[nodeid] = self.seconds.get(nodeid, 0.0) + report.duration
        if "slow" in report.keywords:
            self.slow.add(nodeid)
        if report.when == "teardown" and nodeid in self.slow:
            self.write()  # as each slow test ends: a run cut short still keeps what it measured

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.write()

    def write(self) -> None:
        budget = load(self.path)
        tests = dict(budget["tests"])
        for nodeid, seconds in self.seconds.items():
            if nodeid in self.slow or seconds >= LISTED_FROM_S:
                tests[nodeid] = round(seconds, 1)
            else:
                tests.pop(nodeid, None)  # measured quick this time: no longer listed
        budget["tests"] = dict(sorted(tests.items()))
        self.path.write_text(json.dumps(budget, indent=1) + "\n")


def plain_nodeid(nodeid: str) -> str:
    """A test's id without the ``@group`` pytest-xdist's ``--dist loadgroup`` appends to the ids
    of a group's tests (as xdist reads it: an ``@`` after any parameters' ``]``)."""
    return nodeid[: nodeid.rfind("@")] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


def addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--write-time-budget",
        action="store_true",
        help="measure the tests that run and write their seconds into tests/time_budget.json",
    )


def configure(config: pytest.Config) -> None:
    # Only the controlling process writes the file (an xdist worker has `workerinput`).
    if config.getoption("--write-time-budget") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(Recorder(), "time-budget-recorder")
