"""Stage I per node (mlguild.run.context.ContextBuilder.ideas over mlguild.pools.ideas.ranked):
ideas are chosen for the node at hand (its parent's plan and its branch's reports), ideas the
nodes in flight hold are down-weighted so that parallel workers are offered different ones,
the community cycle's model chooses among the short list, and a node records what it was
offered and what it used (journaled, shown by `mlguild show`)."""

from __future__ import annotations

import itertools
import json
import os

import pytest
from conftest import FULL, GOOD, llm_agent, slow_replies

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.core.graph import Node
from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op, Status
from mlguild.llm import ScriptedLLM
from mlguild.pools.ideas import COMMUNITY, OFFERED, IdeaPool, Source, idea_ids, in_flight
from mlguild.pools.reports import report_of
from mlguild.pools.store import PoolStore
from mlguild.run.propose import context_for

# Six ideas of equal community signal: only relevance and the nodes in flight tell them apart.
IDEAS = (
    "out-of-fold target encoding of the category columns",
    "log-transform the skewed numeric columns",
    "tune lightgbm num_leaves with early stopping",
    "blend ridge and knn predictions",
    "add pairwise interactions of the strongest features",
    "catboost with ordered boosting on the raw categories",
)


def _agent(tmp_path, llm, **sets):
    brain = LLMBrain(llm, LLMBrainOptions(diff_mode=False, cycle=sets.get("brain.cycle") == "community"))
    agent, run = llm_agent(tmp_path, brain, **{"pools.ideas_shown": 3, **sets})
    ids = [
        agent.session.pools.ideas.add(text, COMMUNITY, Source(f"k{k}", kind="post", author_tier="expert", votes=10)).id
        for k, text in enumerate(IDEAS)
    ]
    return agent, run, ids


def test_an_idea_in_flight_loses_rank_by_what_the_nodes_in_flight_hold_of_it():
    pool = IdeaPool(PoolStore())
    lgbm = pool.add("tune lightgbm num_leaves with early stopping", COMMUNITY, Source("k1", votes=10))
    blend = pool.add("blend ridge and knn predictions", COMMUNITY, Source("k2", votes=10))
    assert [i.id for i in pool.ranked("lightgbm leaves", 2)] == [lgbm.id, blend.id]
    # Trying an idea (the plan cites it) holds it wholly, being offered it half.
    busy = in_flight([{"ideas_offered": [lgbm.id, blend.id], "ideas": [lgbm.id]}, {"ideas_offered": [lgbm.id]}])
    assert busy == {lgbm.id: 1.5, blend.id: 0.5}
    # Offered to one other node, the far more relevant idea keeps its place; tried there (and
    # offered to another), it yields.
    assert pool.ranked("lightgbm leaves", 1, busy={lgbm.id: OFFERED})[0].id == lgbm.id
    assert pool.ranked("lightgbm leaves", 1, busy={lgbm.id: busy[lgbm.id]})[0].id == blend.id
    assert idea_ids([pool.get(lgbm.id).line(), "not an idea", f"[{blend.id}] x"]) == [lgbm.id, blend.id]


def test_the_idea_the_latest_gain_came_from_is_always_offered():
    pool = IdeaPool(PoolStore())
    ideas = [pool.add(text, COMMUNITY, Source(f"k{k}", votes=10)) for k, text in enumerate(IDEAS)]
    encoding = ideas[0]
    pool.record_trial(ideas[5].id, "n0003", "gain")  # an older gain
    pool.record_trial(encoding.id, "n0007", "gain")  # the latest: the target encoding worked
    pool.record_trial(ideas[1].id, "n0008", "no gain")
    # By relevance to the query the encoding idea is far down, and in flight elsewhere too:
    # it is still in the list, in its last place (in a list of one, the only one).
    busy = {encoding.id: 1.5}
    ranked = [i.id for i in pool.ranked("lightgbm num_leaves interactions", 3, busy=busy)]
    assert len(ranked) == 3 and ranked[-1] == encoding.id
    assert ideas[2].id == ranked[0]  # the most relevant idea keeps the first place
    assert [i.id for i in pool.ranked("lightgbm num_leaves interactions", 1, busy=busy)] == [encoding.id]


def test_two_nodes_in_flight_are_offered_different_ideas(tmp_path):
    agent, _run, ids = _agent(tmp_path, ScriptedLLM(default=FULL))
    # two workers choosing one after the other, as run.workers does
    first_draft = agent.session.reserve(lambda: (Action(Op.DRAFT, reason="a draft"), 30.0), context_for)
    second_draft = agent.session.reserve(lambda: (Action(Op.DRAFT, reason="another draft"), 30.0), context_for)
    (first, one), (second, two) = (first_draft.node, first_draft.context), (second_draft.node, second_draft.context)
    assert one is not None and two is not None
    offered_one, offered_two = idea_ids(one.ideas), idea_ids(two.ideas)
    assert len(offered_one) == len(offered_two) == 3 and set(offered_one) != set(offered_two)
    # Only the idea far more relevant to the task than the rest (its column kinds: numeric) is
    # offered to both: being offered elsewhere costs an idea half a relevance, not its place.
    assert set(offered_one) & set(offered_two) == {ids[1]}
    assert set(offered_one) | set(offered_two) == set(ids) - {ids[5]}
    # The offer is on the node in flight, where the other workers' selection reads it.
    assert first.meta["ideas_offered"] == offered_one and second.meta["ideas_offered"] == offered_two
    # Rebuilding a node's own context (a duplicate sent back) does not count its own offer.
    again = agent.session.contexts.build(agent.session.state.graph, Action(Op.DRAFT), second.iteration, 30.0, second.id)
    assert idea_ids(again.ideas) == offered_two
    # Once the first node has finished, its ideas are free again.
    first.status = Status.SCORED
    third = agent.session.contexts.build(agent.session.state.graph, Action(Op.DRAFT), 9, 30.0, "n0009")
    assert idea_ids(third.ideas) == offered_one


def test_an_improve_is_offered_the_ideas_of_its_parent_and_branch(tmp_path):
    agent, _run, ids = _agent(tmp_path, ScriptedLLM(default=FULL))
    graph, contexts = agent.session.state.graph, agent.session.contexts
    encoded = Node(
        id="n0001", op=Op.DRAFT, parents=(), iteration=0, status=Status.SCORED, score=0.8, meta={"recipe": "lightgbm"}
    )
    encoded.plan = "Plan: gradient boosting with out-of-fold target encoding of the category columns."
    boosted = Node(id="n0002", op=Op.DRAFT, parents=(), iteration=1, status=Status.SCORED, score=0.7)
    boosted.plan = "Plan: catboost on the raw categories with ordered boosting."
    graph.add(encoded)
    graph.add(boosted)
    first = lambda parent: idea_ids(contexts.build(graph, Action(Op.IMPROVE, (parent,)), len(graph), 30.0).ideas)[0]
    assert first("n0001") == ids[0] and first("n0002") == ids[5]
    # A child of n0002 whose long plan says nothing of it: its branch's report (n0002's) still
    # reaches the query, whose first words are the index's (util/sqlite.MAX_TERMS).
    child = Node(id="n0003", op=Op.IMPROVE, parents=("n0002",), iteration=2, status=Status.SCORED, score=0.71)
    child.plan = "Plan: more rounds. " + " ".join(f"detail{k}" for k in range(60))
    graph.add(child)
    assert first("n0003") == ids[0]  # no report yet: nothing is relevant, the pool's order
    agent.session.pools.reports.add(report_of(boosted, graph))
    assert first("n0003") == ids[5]
    # A draft has no parent: the task's words are its query, as before.
    assert len(contexts.build(graph, Action(Op.DRAFT), len(graph), 30.0).ideas) == 3


def test_the_cycle_model_chooses_among_the_offered_ideas_and_the_node_records_both(tmp_path):
    from typer.testing import CliRunner

    from mlguild.cli.app import app

    llm = ScriptedLLM([], default=None)
    agent, run, ids = _agent(tmp_path, llm, **{"brain.cycle": "community", "budget.iterations": 1})
    offered = idea_ids(agent.session.contexts.build(agent.session.state.graph, Action(Op.DRAFT), 0, 30.0).ideas)
    chosen = offered[1:3]
    draft = "Draft: two ideas together.\n\nWhy: they fit.\n\nComponents:\n" + "".join(f"- it [{i}]\n" for i in chosen)
    llm.replies.extend([draft, f"Plan: as drafted.\n```python\n{GOOD}```\n"])
    agent.run_loop()
    (node,) = agent.session.state.graph
    assert node.ok
    # One request chose: the draft prompt offered the short list and asked for at most three
    # (then come stage III's refine and stage IV's report, which choose nothing).
    purposes = [c["purpose"] for c in llm.calls]
    assert purposes[:2] == ["cycle:draft", "cycle:implement"] and set(purposes[2:]) <= {"cycle:refine", "report"}
    prompt = llm.calls[0]["messages"][-1].content
    assert all(f"[{i}]" in prompt for i in offered) and "choose at most\n3 of the ideas above" in prompt
    # The node records what it was offered and what it used, journaled with its meta.
    assert node.meta["ideas_offered"] == offered and node.meta["ideas"] == chosen
    (started,) = [r for r in run.journal.records if r["type"] == "node_started"]
    assert started["node"]["meta"]["ideas_offered"] == offered and started["node"]["meta"]["ideas"] == chosen
    # ... and `mlguild show` shows them, each with its text, the used ones marked.
    shown = CliRunner().invoke(app, ["show", str(run.path), node.id], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "offered 3, used 2:" in shown.output
    section = shown.output.split("offered 3, used 2:", 1)[1].splitlines()
    for idea_id in offered:
        line = next(ln for ln in section if f"[{idea_id}]" in ln)
        assert ("used" in line) == (idea_id in chosen) and IDEAS[ids.index(idea_id)] in line


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to run two workers' scripts at once")
def test_two_workers_journal_different_offers_for_nodes_in_flight_together(tmp_path):
    llm = ScriptedLLM(default=None, replies=slow_replies(8))
    agent, run, _ids = _agent(tmp_path, llm, **{"budget.iterations": 4})
    assert agent.run_loop(workers=2).finished
    started = {r["node"]["id"]: r for r in run.journal.records if r["type"] == "node_started"}
    finished = {r["id"]: r["ts"] for r in run.journal.records if r["type"] == "node_finished"}
    offers = {node: tuple(r["node"]["meta"]["ideas_offered"]) for node, r in started.items()}
    assert len(offers) == 4 and all(len(o) == 3 for o in offers.values())
    # a was reserved first (ids are given in order) and finished after b started: a was in
    # flight when b's ideas were chosen, so b was offered other ideas.
    together = [(a, b) for a, b in itertools.combinations(sorted(started), 2) if finished[a] > started[b]["ts"]]
    assert together, json.dumps(started, default=str)[:2000]
    assert all(set(offers[a]) != set(offers[b]) for a, b in together), (together, offers)
