"""The dashboard in a real headless browser (Debian's chromium via Playwright) against a real
server over a run the CLI recorded: the runs list, the graph, a node page with its diff, a
journal append shown without a reload, and the paths it refuses. Screenshots are saved (see
conftest.SCREENSHOTS)."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
import urllib.request

from mlguild.core.graph import Node
from mlguild.llm.ledger import Ledger
from mlguild.rundir.journal import Journal, read_journal
from mlguild.rundir.records import Outcome, record_finished, record_started

from .conftest import free_port, screenshot


def test_runs_list_shows_the_run_with_its_task_brain_and_scores(served, page):
    page.goto(served.url + "/")
    row = page.locator("#runs-table tr[data-run='rec']")
    row.wait_for()
    text = row.inner_text()
    assert "task-rec" in text and "scripted" in text
    assert "8 of 8 nodes" in text  # the budget used
    screenshot(page, "dashboard-runs")
    assert not page.errors


def test_graph_of_a_two_worker_run_renders_every_node(served, page):
    records = read_journal(served.runs / "rec" / "journal.jsonl")
    started = {r["node"]["id"]: r["node"] for r in records if r["type"] == "node_started"}
    assert {n.get("worker", 1) for n in started.values()} == {1, 2}  # the run really had two workers
    page.goto(served.url + "/#/run/rec")
    page.locator("#graph g.node").first.wait_for()
    drawn = set(page.locator("#graph g.node").evaluate_all("els => els.map(e => e.dataset.id)"))
    assert drawn == set(started)
    # Each node is labelled by its title, and the best lineage is marked.
    label = page.locator(f"#graph g.node[data-id='{next(iter(started))}'] text").first.text_content()
    assert next(iter(started.values()))["title"][:20] in label
    assert page.locator("#graph path.lineage").count() >= 1 or len(started) == 1
    assert page.locator("#workers [data-worker]").count() == 2
    assert page.locator("#score-plot circle").count() >= 1
    reports = sum(1 for n in started.values() if n["op"] != "refit")
    rows = page.locator("#reports-table tbody tr")
    rows.nth(reports - 1).wait_for()  # the report pool loads after the graph: wait, never race it
    assert rows.count() == reports  # the report pool, read-only
    screenshot(page, "dashboard-run")
    assert not page.errors


def test_clicking_a_node_opens_its_page_with_the_diff(served, page):
    records = read_journal(served.runs / "rec" / "journal.jsonl")
    child = next(r["node"] for r in records if r["type"] == "node_started" and r["node"]["op"] == "improve")
    page.goto(served.url + "/#/run/rec")
    page.locator(f"#graph g.node[data-id='{child['id']}'] circle").first.click()
    page.locator(f"#node-page[data-id='{child['id']}']").wait_for()
    assert page.url.endswith(f"#/run/rec/node/{child['id']}")
    diff = page.locator("#diffs pre.diff").first.inner_text()
    parent = child["parents"][0]
    assert f"--- {parent}/solution.py" in diff and f"+++ {child['id']}/solution.py" in diff
    assert "-SHRINK" in diff and "+SHRINK" in diff  # the scripted brain changed the shrink
    assert "SHRINK" in page.locator("#code").inner_text()
    # The memory records its brain was shown (this run's earlier nodes, in a dry run).
    assert child["recall"] and page.locator("#recall li").count() == len(child["recall"])
    screenshot(page, "dashboard-node")
    assert not page.errors


def test_a_node_appended_to_the_journal_appears_without_a_reload(served, page):
    page.goto(served.url + "/#/run/rec")
    page.locator("#graph g.node").first.wait_for()
    page.evaluate("window.__not_reloaded = true")
    before = page.locator("#graph g.node").count()
    node = Node(
        id="n0100", op="improve", parents=("n0001",), iteration=100, plan="## Appended live\n", title="Appended live"
    )
    with Journal(served.runs / "rec" / "journal.jsonl") as journal:
        record_started(journal, node, "a test", worker=2)
        page.locator("#graph g.node[data-id='n0100'][data-status='pending']").wait_for(timeout=15000)
        record_finished(journal, node, Outcome("crash", failure="Traceback\nValueError: boom", timing={"exec_s": 1.0}))
    page.locator("#graph g.node[data-id='n0100'][data-status='crash']").wait_for(timeout=15000)
    assert page.evaluate("window.__not_reloaded") is True
    assert "crash" in page.locator("svg.plot").nth(1).inner_html()  # failures by class, redrawn
    # A fuse of two branches, written by an LLM whose calls the ledger journals as a run does.
    fuse = Node(id="n0101", op="fuse", parents=("n0004", "n0002"), iteration=101, title="Fuse of two branches")
    with Journal(served.runs / "rec" / "journal.jsonl") as journal:
        ledger = Ledger(sink=lambda rec: journal.append("llm_call", **rec))
        for attempt in (1, 2):
            ledger.record(
                Ledger.make_record(
                    "openai/gpt-4.1",
                    outcome="ok",
                    attempt=attempt,
                    purpose="fuse",
                    node="n0101",
                    input_tokens=3000,
                    output_tokens=500,
                    cost_usd=0.01,
                )
            )
        record_started(journal, fuse, "a test", worker=1)
    page.locator("#graph g.node[data-id='n0101']").wait_for(timeout=15000)
    assert page.locator("#graph g.node").count() == before + 2
    assert page.locator("#graph path.edge[data-to='n0101']").count() == 2  # both parents drawn
    assert "2 calls · 7,000 tokens · $0.0200" in page.locator("#llm-summary").inner_text()
    assert page.evaluate("window.__not_reloaded") is True
    screenshot(page, "dashboard-live")
    assert not page.errors


def _status(served, path: str, host: str | None = None) -> int:
    """The status of a raw request: ``path`` is sent as written (no client normalises it)."""
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": host} if host else {})
        return conn.getresponse().status
    finally:
        conn.close()


def test_paths_outside_the_runs_folder_or_into_sealed_are_refused(served, page):
    sealed = next(p.name for p in (served.runs / "rec" / "sealed").iterdir())
    assert _status(served, "/runs/rec/files/nodes/n0001/plan.md") == 200  # what it may serve, it serves
    assert _status(served, f"/runs/rec/files/sealed/{sealed}") == 403
    assert _status(served, f"/runs/rec/files/nodes/../sealed/{sealed}") == 403
    assert _status(served, "/runs/rec/files/../../../../etc/passwd") == 403
    assert _status(served, "/runs/rec/files/%2e%2e/%2e%2e/etc/passwd") == 403
    assert _status(served, "/runs/rec/files//etc/passwd") == 403
    assert _status(served, "/runs/..%2f..%2fetc/files/passwd") == 404
    assert _status(served, "/api/runs/..") == 404
    assert _status(served, "/static/../runs/rec/journal.jsonl") == 404
    # A link a script planted in its node folder, pointing at the sealed labels, is refused too.
    link = served.runs / "rec" / "nodes" / "n0001" / "labels.csv"
    link.symlink_to(served.runs / "rec" / "sealed" / sealed)
    assert _status(served, "/runs/rec/files/nodes/n0001/labels.csv") == 403
    # A page elsewhere whose name was rebound to this machine is not answered.
    assert _status(served, "/api/runs", host="evil.example") == 400
    assert _status(served, "/api/runs", host=f"localhost:{served.port}") == 200
    # And the browser is refused the same way.
    response = page.goto(served.url + f"/runs/rec/files/sealed/{sealed}")
    assert response is not None and response.status == 403


def test_serve_command_serves_the_runs_folder_on_localhost(recorded, tmp_path):
    port = free_port()
    env = {**os.environ, "MLGUILD_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlguild", "serve", str(recorded), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/runs", timeout=5) as response:
                    runs = json.loads(response.read())
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
        assert [r["id"] for r in runs] == ["rec"]
        assert runs[0]["best"]["title"]
    finally:
        proc.terminate()
        proc.wait(20)


def test_serve_refuses_a_folder_that_does_not_exist(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "mlguild", "serve", str(tmp_path / "nowhere")], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert "is not a folder of runs" in out.stderr and "fix:" in out.stderr


def test_a_node_page_plots_the_importances_its_script_wrote(served, page):
    # What a recipe script writes (output/importance.csv), here for the first node of the run
    output = served.runs / "rec" / "nodes" / "n0001" / "output"
    output.mkdir(exist_ok=True)
    (output / "importance.csv").write_text("feature,importance\nx1,0.2\nx0,0.7\nx2,0.1\n")
    page.goto(served.url + "/#/run/rec/node/n0001")
    card = page.locator("#node-page[data-id='n0001'] #importance")
    card.wait_for()
    assert card.locator("svg rect").count() == 3
    labels = [t for t in card.locator("svg text").all_text_contents() if t.startswith("x")]
    assert labels == ["x0", "x1", "x2"]  # largest first
    screenshot(page, "dashboard-node-importance")
    assert not page.errors
    page.goto(served.url + "/#/run/rec/node/n0002")  # a node that wrote none shows no chart
    page.locator("#node-page[data-id='n0002']").wait_for()
    assert page.locator("#importance").count() == 0


def test_a_pooled_score_is_named_as_such_on_the_dashboard(served, page):
    """A node ranked by the pooled score of a small holdout: its page shows the pooled score
    and the holdout score apart, and the top table marks it (issue 26: labelled wherever shown)."""
    node = Node(id="n0102", op="draft", parents=(), iteration=102, plan="## Pooled\n", title="Pooled")
    with Journal(served.runs / "rec" / "journal.jsonl") as journal:
        record_started(journal, node, "a test", worker=1)
        outcome = Outcome("scored", score=0.0125, holdout_score=0.0175, oof_score=0.011, timing={"exec_s": 1.0})
        record_finished(journal, node, outcome)
    page.goto(served.url + "/#/run/rec/node/n0102")
    page.locator("#node-page[data-id='n0102']").wait_for()
    card = page.locator("#node-page .kv").first.inner_text()
    assert "pooled score\n0.0125 (holdout and out-of-fold" in card and "holdout score\n0.0175 (harness" in card
    page.goto(served.url + "/#/run/rec")
    row = page.locator("#top-table tbody tr", has_text="n0102")
    row.wait_for()
    assert "0.0125 (pooled)" in row.inner_text()
    first = page.locator("#top-table tbody tr", has_text="n0001")  # a holdout score: no mark
    assert first.count() == 0 or "pooled" not in first.inner_text()
    assert not page.errors
