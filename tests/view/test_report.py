"""The run report: written at the end of a run and by `mlguild report`, self-contained (its
plots inline, nothing fetched), with the facts the issue names; its plots are screenshotted
in the headless browser."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from mlguild.core.graph import Node
from mlguild.core.score import format_score
from mlguild.rundir.journal import Journal, read_journal
from mlguild.rundir.records import Outcome, record_finished, record_started
from mlguild.scoring.floors import floors
from mlguild.view.report import write_report

from .conftest import record_run, screenshot, screenshot_path


def test_every_run_ends_with_its_report(recorded):
    run = recorded / "rec"
    html = (run / "report.html").read_text()
    md = (run / "report.md").read_text()
    records = read_journal(run / "journal.jsonl")
    best = [r["id"] for r in records if r["type"] == "best_changed"][-1]
    grade = next(r for r in records if r["type"] == "final_graded")
    for text in (html, md):
        assert "task-rec" in text and "rmse" in text
        assert best in text  # the best node, and its lineage below
        assert "lineage" in text and "Outcome per operation" in text and "Top 10" in text
        assert format_score(grade["test_score"]) in text  # the test grade, as every view prints a score
        assert "floor" in text
    assert "<svg" in html


def test_the_report_shows_the_ladder_the_autonomy_count_and_the_resources(recorded):
    """What `mlguild status` shows of a run's standing is in its report too: the baseline
    ladder from floor to ceiling, the autonomy count and the one-line resources summary."""
    run = recorded / "rec"
    html = (run / "report.html").read_text()
    md = (run / "report.md").read_text()
    records = read_journal(run / "journal.jsonl")
    floor = min(floors(records))  # rmse: the lower constant is the floor
    nodes = sum(1 for r in records if r["type"] == "node_started" and r["node"]["op"] not in ("refit", "eda"))
    assert "## Baseline ladder" in md and "<h2>Baseline ladder</h2>" in html
    rungs = [
        line.split(" | ")[0].lstrip("| ")
        for line in md.split("## Baseline ladder")[1].split("\n## ")[0].splitlines()
        if line.startswith("| ")
    ]
    assert rungs[1:] == ["floor", "linear", "lightgbm", "best", "final", "ceiling"]  # under the header row
    assert f"| floor | {floor:.6g} | 0.0% |" in md
    assert "| ceiling | 0 | 100.0% |" in md and "the metric's best value" in md
    for text in (md, html):
        assert f"no intervention; {nodes} nodes" in text  # nobody touched this run
        assert f"{nodes} of 8 iterations" in text and "0 tokens; $0.0000" in text
    assert html.count('<table id="ladder">') == 1


def test_report_command_writes_a_self_contained_page(recorded, tmp_path, page):
    run = recorded / "rec"
    (run / "report.html").unlink()
    env = {**os.environ, "MLGUILD_HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "mlguild", "report", str(run)], capture_output=True, text=True, env=env, check=True
    )
    assert "report.html" in out.stdout
    html = (run / "report.html").read_text()
    # Nothing the page would load: no script, stylesheet, image or font from anywhere.
    assert not re.search(r"<(script|link|img|iframe)\b", html)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "url(http" not in html
    requested: list[str] = []
    page.route("**/*", lambda route: (requested.append(route.request.url), route.continue_()))
    page.goto(run.joinpath("report.html").as_uri())
    assert [u for u in requested if not u.startswith("file:")] == []
    assert page.locator("#plot-score-over-time svg").count() == 1
    assert page.locator("#top tbody tr").count() >= 1
    ladder = page.locator("#ladder tbody tr")
    assert ladder.count() == 6 and ladder.first.locator("td").first.inner_text() == "floor"
    assert page.locator("#summary").get_by_text("no intervention", exact=False).count() == 1
    screenshot(page, "report")
    page.locator("#plot-score-over-time").screenshot(path=str(screenshot_path("report-score-plot")))


def test_report_of_a_run_with_failures_counts_them(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    run = record_run(runs, "one", workers=1, iterations=2)
    node = Node(id="n0050", op="debug", parents=("n0001",), iteration=50, title="A broken fix")
    with Journal(run / "journal.jsonl") as journal:
        record_started(journal, node)
        record_finished(journal, node, Outcome("timeout", failure="killed after 20 s", timing={"exec_s": 20.0}))
    write_report(run)
    md = (run / "report.md").read_text()
    assert "| timeout | 1 | killed after 20 s |" in md
    assert "| debug | 1 | 0 | 1 | 0 | 0 |" in md
