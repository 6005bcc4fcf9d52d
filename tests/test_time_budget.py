"""The suite stays within its time budget (tests/time_budget.py says how it is kept)."""

from __future__ import annotations

from pathlib import Path

import pytest
from time_budget import BUDGET_FILE, Recorder, load, plain_nodeid


def test_every_slow_test_is_measured_and_the_total_fits_the_ceiling(request):
    budget = load()
    slow = {plain_nodeid(item.nodeid) for item in request.session.items if item.get_closest_marker("slow")}
    unmeasured = sorted(slow - set(budget["tests"]))
    assert unmeasured == [], (
        f"slow tests with no measured seconds in {BUDGET_FILE.name}: measure them with "
        f"`./scripts/test --write-time-budget {' '.join(unmeasured[:3])} ...`"
    )
    total = sum(budget["tests"].values())
    assert total <= budget["ceiling_s"], (
        f"the listed tests take {total:.0f} s together, over the ceiling of {budget['ceiling_s']} s: "
        "make an end-to-end test prove its one capability on smaller data, or share a run between tests"
    )


def test_the_budget_lists_only_tests_that_exist():
    # An entry whose file is gone inflates the total and hides real growth.
    root = Path(__file__).resolve().parents[1]
    missing = sorted(
        {nodeid.split("::")[0] for nodeid in load()["tests"]}
        - {str(p.relative_to(root)) for p in (root / "tests").rglob("test_*.py")}
    )
    assert missing == []


def _report(nodeid: str, when: str, seconds: float, slow: bool) -> pytest.TestReport:
    keywords = {"slow": 1} if slow else {}
    return pytest.TestReport(nodeid, ("f.py", 0, "t"), keywords, "passed", None, when, [], duration=seconds)


def test_the_recorder_writes_what_it_measured_and_keeps_the_rest(tmp_path):
    path = tmp_path / "budget.json"
    path.write_text('{"ceiling_s": 100, "tests": {"tests/test_a.py::old": 9.0, "tests/test_a.py::quick": 5.0}}')
    recorder = Recorder(path)
    for when, seconds in (("setup", 1.0), ("call", 20.0), ("teardown", 0.5)):
        recorder.pytest_runtest_logreport(_report("tests/test_a.py::e2e", when, seconds, slow=True))
    recorder.pytest_runtest_logreport(_report("tests/test_a.py::quick", "call", 0.2, slow=False))
    recorder.pytest_runtest_logreport(_report("tests/test_a.py::long", "call", 4.0, slow=False))
    recorder.pytest_sessionfinish(None)  # type: ignore[arg-type]
    written = load(path)
    assert written["ceiling_s"] == 100
    # the slow test's three phases added up; a long unmarked test listed; a test measured
    # quick this time dropped; one that did not run kept as it was
    assert written["tests"] == {"tests/test_a.py::e2e": 21.5, "tests/test_a.py::long": 4.0, "tests/test_a.py::old": 9.0}
