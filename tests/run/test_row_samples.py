"""A search that scales with rows (mlguild.run.samples): on a large training table, drafts
train on a nested random sample, the best of each size runs again on more rows (a ``grow``),
the final refit trains on every labelled row, and the time kept back for that refit grows with
the rows the sample left out. "Large" is made small here by configuration."""

from __future__ import annotations

import numpy as np
import pandas as pd
from conftest import FULL, llm_agent, make_task

from mlguild.brains import get_brain
from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.config import load_config
from mlguild.config.search import SearchConfig
from mlguild.core.graph import Node, SearchGraph
from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op, Status
from mlguild.final.stage import finish
from mlguild.llm import ScriptedLLM
from mlguild.run.cost import work_units
from mlguild.run.loop import Agent
from mlguild.run.refit import node_refit_seconds, write_full_data
from mlguild.run.samples import SAMPLES, RowPlan, ladder, rows_scaled_seconds, sample_dir, sample_mask
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.task.folder import load_task

SAMPLED = {"search.sample_above_rows": 500, "search.sample_min_rows": 200, "search.sample_factor": 2}


def test_the_ladder_runs_from_the_smallest_sample_to_every_row_and_only_on_a_large_table():
    cfg = SearchConfig(sample_above_rows=200_000, sample_min_rows=50_000, sample_factor=4)
    assert ladder(8_000_000, cfg) == [125_000, 500_000, 2_000_000, 8_000_000]
    assert ladder(300_000, cfg) == [75_000, 300_000]
    assert ladder(210_000, cfg) == [52_500, 210_000] and ladder(200_000, cfg) == []
    assert ladder(150_000, cfg.model_copy(update={"sample_above_rows": 100_000})) == []  # no sample holds min rows
    assert ladder(8_000_000, cfg.model_copy(update={"row_samples": False})) == []


def test_samples_are_nested_seeded_and_keep_a_groups_rows_together(tmp_path):
    ids = pd.DataFrame({"id": [f"u{i // 3}" for i in range(3000)], "x": range(3000)})  # groups of 3 rows
    ids.to_csv(tmp_path / "t.csv", index=False)
    small, large = sample_mask(tmp_path / "t.csv", 300, "id"), sample_mask(tmp_path / "t.csv", 1200, "id")
    assert 300 <= small.sum() < 303 and 1200 <= large.sum() < 1203
    assert not (small & ~large).any()  # every row of the smaller sample is in the larger one
    assert (sample_mask(tmp_path / "t.csv", 300, "id") == small).all()  # the same rows every time
    kept = ids["id"][small]
    assert (ids["id"].isin(set(kept)) == small).all()  # a group's rows all in, or all out
    assert small[:300].sum() < 280  # a random draw, not the first rows


def test_a_samples_data_folder_holds_a_subset_of_the_training_rows_and_the_rest_as_it_is(tmp_path):
    cfg = load_config(None, [f"{k}={v}" for k, v in SAMPLED.items()])
    run = create_run(load_task(make_task(tmp_path / "t", n=2000)), cfg, tmp_path / "runs")
    data = run.workspace.data_dir
    folder = sample_dir(run, 225)
    assert folder == data.parent / SAMPLES / "225" and sample_dir(run, 225) == folder  # written once
    whole = (data / "train.csv").read_text().splitlines()
    part = (folder / "train.csv").read_text().splitlines()
    assert part[0] == whole[0] and len(part) == 226 and set(part) <= set(whole)
    for name in ("holdout.csv", "test.csv"):  # the same file, linked
        assert (folder / name).read_bytes() == (data / name).read_bytes()
        assert (folder / name).stat().st_ino == (data / name).stat().st_ino
    run.close()


def _node(graph: SearchGraph, i: int, score: float, rows: int | None, exec_s: float = 10.0, op=Op.DRAFT, parents=()):
    node = Node(f"n{i:04d}", op, parents, i, status=Status.SCORED, score=score)
    node.meta = {"train_rows": rows, "train_rows_of": 1000} if rows else {}
    node.timing = {"exec_s": exec_s}
    return graph.add(node)


def test_the_best_of_a_sample_grows_to_the_next_size_when_enough_compete_and_it_fits():
    plan = RowPlan(1000, (250, 500, 1000), 2)
    graph = SearchGraph("maximize")
    key = lambda n: graph.score_of(n).key()
    _node(graph, 1, 0.80, 250)
    assert plan.promotion(graph, 100.0, key) is None  # one node of that size: nothing compared yet
    _node(graph, 2, 0.85, 250)
    _node(graph, 3, 0.70, 250)
    grow = plan.promotion(graph, 100.0, key)
    assert grow is not None and (grow.op, grow.parents, grow.rows) == (Op.GROW, ("n0002",), 500)
    assert plan.promotion(graph, 15.0, key) is None  # 10 s on 250 rows: about 20 s on 500, over the limit
    graph["n0002"].timing["fit_s"] = 4.0  # of its 10 s, 4 fitting: about 14 s on 500 rows
    assert plan.promotion(graph, 15.0, key) is not None
    _node(graph, 4, 0.86, 500, 20.0, Op.GROW, ("n0002",))
    assert plan.promotion(graph, 100.0, key) is None  # grown already; the best share is one of three
    _node(graph, 5, 0.87, 500, 20.0, Op.IMPROVE, ("n0004",))
    top = plan.promotion(graph, 100.0, key)  # the larger sample first, and its next size is every row
    assert top is not None and top.parents == ("n0005",) and top.rows is None
    # Moves inherit their parent's sample; a blend trains on no rows; a draft takes the smallest
    # sample until something was measured, and without a time budget.
    assert plan.assign(Action(Op.IMPROVE, ("n0004",)), graph, 1e9).rows == 500
    assert plan.assign(Action(Op.BLEND, ("n0004", "n0001")), graph, 1e9).rows is None
    assert plan.assign(Action(Op.DRAFT), SearchGraph("maximize"), 1e9).rows == 250
    assert plan.assign(Action(Op.DRAFT), graph, None).rows == 250
    # 10 s per 250 rows measured: ten drafts of every row fit in 400 s, of 500 rows in 200 s.
    assert plan.assign(Action(Op.DRAFT), graph, 400.0).rows is None
    assert plan.assign(Action(Op.DRAFT), graph, 200.0).rows == 500


def test_a_draft_is_sized_by_the_costliest_script_so_far_and_stays_under_a_memory_failure():
    # Issue 40: on ten million rows a linear reference (0.5 s fitting) sized the next draft at
    # every row; it was a HistGradientBoosting, which ran out of memory, and so did its debugs.
    plan = RowPlan(1000, (250, 500, 1000), 2)
    graph = SearchGraph("maximize")
    _node(graph, 1, 0.80, 250, 10.0)
    graph["n0001"].timing["fit_s"] = 0.1  # a linear model: 10 s, nearly all reading and predicting
    assert plan.assign(Action(Op.DRAFT), graph, 200.0).rows is None  # alone it says every row fits
    _node(graph, 2, 0.85, 250, 10.0)
    graph["n0002"].timing["fit_s"] = 8.0  # boosting: 8 of its 10 s fitting, about 34 s on every row
    assert plan.assign(Action(Op.DRAFT), graph, 200.0).rows == 500  # the costlier decides, not the median
    killed = _node(graph, 3, 0.0, 250, 30.0)
    killed.status, killed.score = "timeout", None  # killed at 30 s on 250 rows: at least 60 s on 500
    assert plan.assign(Action(Op.DRAFT), graph, 400.0).rows == 250
    assert plan.assign(Action(Op.DRAFT), graph, 1e9).rows is None
    out = _node(graph, 4, 0.0, 1000, 5.0)
    out.status, out.score = "memory", None  # every row did not fit in memory
    assert plan.assign(Action(Op.DRAFT), graph, 1e9).rows == 500
    assert plan.assign(Action(Op.DEBUG, ("n0004",)), graph, 1e9).rows == 500  # its repair on fewer rows
    assert plan.assign(Action(Op.DEBUG, ("n0003",)), graph, 1e9).rows == 250  # a timeout's on its own


def test_a_sampled_nodes_refit_and_cost_grow_with_the_rows_its_sample_left_out():
    whole, sampled = Node("n0001", Op.DRAFT, (), 1), Node("n0002", Op.DRAFT, (), 2)
    whole.timing = sampled.timing = {"exec_s": 10.0}
    sampled.meta = {"train_rows": 250, "train_rows_of": 1000}
    assert node_refit_seconds(sampled, 1.25, 1.0) == 4 * node_refit_seconds(whole, 1.25, 1.0) == 50.0
    # A script that says it spent 2 of its 10 s fitting: only those grow with the rows (reading
    # the files and predicting the holdout and test rows do not).
    sampled.timing["fit_s"] = 2.0
    # Refitted on 1.25 times the search's file: its fitting grows 4 x 1.25 times, the rest stays.
    assert rows_scaled_seconds(sampled, 4.0) == 16.0 and node_refit_seconds(sampled, 1.25, 1.0) == 18.0
    assert work_units({"run": {"n_folds": 5}, "train_rows": 250}, 1000) == 1.25
    assert work_units({"run": {"n_folds": 5, "max_train_rows": 100}, "train_rows": 250}, 1000) == 0.5


def test_a_recipe_search_trains_on_samples_grows_its_best_and_refits_on_every_row(tmp_path):
    sets = {**SAMPLED, "budget.iterations": 6, "brain.eda": False, "final.reference_models": False}
    sets["firewall.parquet_above_mb"] = 0  # the scripts read the typed copies a large table gets
    cfg = load_config(None, [f"{k}={v}" for k, v in sets.items()])  # no time budget: drafts on the smallest
    run = create_run(load_task(make_task(tmp_path / "t", n=2000)), cfg, tmp_path / "runs")
    agent = Agent(open_session(run, get_brain("recipes")))
    assert agent.session.rows.sizes == (225, 450, 900)
    stop = agent.run_loop()
    sample = run.workspace.data_dir.parent / SAMPLES / "225"
    assert len(pd.read_parquet(sample / "train.parquet")) == 225  # the typed copy is the sample's too
    done = finish(agent.session, stop)
    graph = agent.session.state.graph
    drafts = [n for n in graph if n.op == Op.DRAFT]
    assert drafts and all(n.meta.get("train_rows") == 225 and n.ok for n in drafts), [(n.id, n.status) for n in drafts]
    assert all(0 < n.timing["fit_s"] <= n.timing["exec_s"] for n in drafts)  # what the recipes say they fitted
    for node in drafts:  # the script read the sample: its out-of-fold rows are the sample's
        oof = pd.read_csv(run.node_dir(node.id) / "output" / "oof.csv")
        assert len(oof) == 225
    grows = [n for n in graph if n.op == Op.GROW]
    assert grows, [(n.id, n.op, n.meta.get("train_rows")) for n in graph]
    first = grows[0]
    parent = graph[first.parents[0]]
    assert first.meta["train_rows"] == 450 and first.meta["grown_from"] == parent.id
    assert (
        first.code_sha256 == parent.code_sha256
        and len(pd.read_csv(run.node_dir(first.id) / "output" / "oof.csv")) == 450
    )
    before = [n for n in graph if n.id < first.id and n.ok and n.meta.get("train_rows") == 225]
    assert len(before) >= 2 and parent.id == max(before, key=lambda n: float(n.score or 0)).id  # the best of its size
    journaled = [r["node"] for r in run.journal.records if r["type"] == "node_started" and r["node"]["id"] == first.id]
    assert journaled and journaled[0]["meta"]["train_rows"] == 450
    refit = next(n for n in graph if n.op == Op.REFIT)
    assert refit.status == Status.FINAL_OK and done.choice is not None
    assert not (run.workspace.data_dir.parent / SAMPLES).exists()  # the samples are gone with the search
    assert np.isfinite(done.grade["test_score"])
    run.close()


def test_the_llm_is_told_its_node_trains_on_a_sample(tmp_path):
    llm = ScriptedLLM([], default=FULL)
    sets = {"search.sample_above_rows": 50, "search.sample_min_rows": 20, "budget.iterations": 1}
    agent, run = llm_agent(tmp_path, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), **sets)
    agent.run_loop()
    rows = agent.session.rows
    prompt = "\n".join(m.content for m in llm.calls[-1]["messages"])
    assert f"a random sample of {rows.sizes[0]} of its {rows.n_train} rows" in prompt
    node = next(iter(agent.session.state.graph))
    assert node.ok and node.meta["train_rows"] == rows.sizes[0]
    run.close()


def test_a_refit_with_no_time_for_every_row_trains_on_a_seeded_share_of_all_labelled_rows(tmp_path):
    run = create_run(load_task(make_task(tmp_path / "t", n=2000)), load_config(None, []), tmp_path / "runs")
    every = pd.read_csv(write_full_data(run.spec, run.workspace, tmp_path / "all") / "train.csv", dtype={"id": str})
    share = pd.read_csv(
        write_full_data(run.spec, run.workspace, tmp_path / "share", rows=700) / "train.csv", dtype={"id": str}
    )
    again = pd.read_csv(
        write_full_data(run.spec, run.workspace, tmp_path / "again", rows=700) / "train.csv", dtype={"id": str}
    )
    assert len(share) == 700 and share.equals(again)  # seeded: the same rows each time
    assert set(share["id"]) < set(every["id"])  # labelled rows of both kinds: train and holdout
    holdout = set(pd.read_csv(run.workspace.data_dir / "holdout.csv", dtype={"id": str})["id"])
    assert 0 < len(set(share["id"]) & holdout) < len(holdout)
    merged = share.merge(every, on="id", suffixes=("", "_all"))
    assert (merged["y"] == merged["y_all"]).all()  # each row with its own label
    run.close()
