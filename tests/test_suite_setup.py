"""The suite's own machinery: what ./scripts/test relies on to run tests side by side."""

from __future__ import annotations

import pytest
from time_budget import plain_nodeid


@pytest.mark.xdist_group("grouping-check")
def test_pytest_xdist_keeps_a_group_on_one_worker(request):
    """Under ``--dist loadgroup`` a group's tests share one worker only if pytest-xdist could add
    the group to their ids (pytest 9.2 keeps ids where xdist 3.8 cannot: pyproject pins below it)."""
    if not getattr(request.config.option, "loadgroup", False):  # what an xdist worker keeps of it
        pytest.skip("not run under pytest-xdist's --dist loadgroup (./scripts/test runs it so)")
    assert request.node.nodeid.endswith("@grouping-check"), request.node.nodeid


def test_the_time_budget_files_tests_under_their_plain_ids():
    assert plain_nodeid("tests/a.py::test_x@ray") == "tests/a.py::test_x"
    assert plain_nodeid("tests/a.py::test_x[a@b]") == "tests/a.py::test_x[a@b]"
    assert plain_nodeid("tests/a.py::test_x[a@b]@ray") == "tests/a.py::test_x[a@b]"
