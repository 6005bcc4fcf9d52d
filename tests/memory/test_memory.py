"""Memory: experience records in SQLite FTS5, retrieval, a run's own memory, the store that
later runs read, concurrent writers, and what the brains are shown."""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import sqlite3

import pytest
from conftest import CRASH, GOOD, make_task
from conftest import scripted_agent as _agent

from mlguild.brains.llm.brain import LLMBrain, LLMBrainOptions
from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.recipes.choice import move_stats
from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config, mlguild_home
from mlguild.core.errors import ConfigError
from mlguild.core.protocols import HistoryItem, Proposal
from mlguild.final.stage import finish
from mlguild.llm import ScriptedLLM
from mlguild.memory import Memory, MemoryStore, MovePrior, Retriever, TaskTraits
from mlguild.memory.experience import Experience
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.sandbox import get_sandbox
from mlguild.task.folder import load_task

TRAITS = TaskTraits("binary", "roc_auc", 5000, 20, "tabular", 0.01, 12)


def _exp(node: str, change: str, outcome: str = "gain", run: str = "r1", op: str = "improve", **kw) -> Experience:
    fields = dict(
        run=run,
        task="t",
        node=node,
        op=op,
        status="crash" if outcome == "failed" else "scored",
        outcome=outcome,
        title=change,
        plan=change,
        change=change,
        recipe="lightgbm",
        move="",
        score=None if outcome == "failed" else 0.8,
        parent="",
        parent_score=None,
        gain_spreads=None,
        cost_ratio=None,
        exec_s=1.0,
        traits=TRAITS,
    )
    fields.update(kw)
    return Experience(**fields)


TOPICS = [
    "target encoding of high cardinality categories with out of fold means",
    "date features from the signup timestamp: TypeError cannot subtract tz-naive and tz-aware",
    "lower learning rate and more boosting rounds with early stopping",
    "text column as TF-IDF word n-grams into a linear model",
    "log transform of the skewed target for regression",
    "drop the constant and id columns before training",
    "class weights for the rare minority class",
    "memory error: one-hot encoding of a 50000 level column",
]


def test_store_adds_replaces_searches_and_forgets():
    store = MemoryStore()
    for i, topic in enumerate(TOPICS):
        store.add(_exp(f"n{i:04d}", topic, "failed" if "Error" in topic or "error" in topic else "gain"))
    assert store.count() == len(TOPICS)
    store.add(_exp("n0000", "target encoding, now smoothed", "no_gain"))  # the same node again: replaced
    assert store.count() == len(TOPICS)
    hits = store.search("timezone tz-aware timestamp subtract", 3)
    assert hits[0][1].node == "n0001"
    assert next(e.node for _, e in store.search("target encoding", 5)) == "n0000"
    assert store.search("encoding", 5, outcomes=("failed",))[0][1].node == "n0007"
    # Words that are FTS syntax, quotes and punctuation are searched as words, never parsed.
    odd = store.search('NEAR( "AND" OR -x * : ^', 20)
    assert odd and all({"and", "or", "near"} & set(e.change.lower().split()) for _, e in odd)
    assert next(e.node for _, e in store.search('he said "boosting" AND NOT (rounds', 5)) == "n0002"
    assert store.forget(run="r1") == len(TOPICS) and store.count() == 0


def test_retrieval_puts_the_relevant_record_first_at_scale():
    retriever = Retriever(MemoryStore())
    for i in range(400):
        retriever.add(_exp(f"n{i:04d}", TOPICS[i % len(TOPICS)] + f" variant {i}", run=f"r{i % 7}"))
    found = retriever.search("TypeError subtracting timezone-aware dates", 5)
    assert found and all("timestamp" in e.change for e in found)
    only = retriever.search("learning rate", 50, run="r3")
    assert only and {e.run for e in only} == {"r3"}


def _write_many(path: str, run: str, n: int) -> None:
    store = MemoryStore(path)
    for i in range(n):
        store.add(_exp(f"n{i:04d}", f"{TOPICS[i % len(TOPICS)]} by {run}", run=run))
    store.close()


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "memory.sqlite")
    MemoryStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(path, f"run{k}", 200)) for k in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    store = MemoryStore(path)
    assert store.count() == 400 and store.count(run="run0") == store.count(run="run1") == 200
    assert {e.run for _, e in store.search("boosting rounds", 100)} == {"run0", "run1"}
    assert store._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_an_unusable_store_is_a_clear_error(tmp_path):
    bad = tmp_path / "memory.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ConfigError, match="cannot be used") as err:
        MemoryStore(bad)
    assert "--no-memory" in err.value.fix


def test_traits_distance_prefers_tasks_of_the_same_kind():
    near = TaskTraits("binary", "roc_auc", 8000, 25, "tabular", 0.0, 10)
    other_type = TaskTraits("regression", "rmse", 5000, 20, "tabular", 0.01, 12)
    bigger = TaskTraits("binary", "roc_auc", 5_000_000, 20, "tabular", 0.01, 12)
    assert TRAITS.distance(TRAITS) == 0
    assert TRAITS.distance(near) < 1 < TRAITS.distance(bigger) < TRAITS.distance(other_type)


def test_a_failure_in_this_run_is_shown_before_the_next_proposals(small_task, tmp_path):
    seen = []

    def capture(action, context):
        seen.append((action.parents, context.recall))
        return Proposal("plan: a fresh logistic curve", GOOD, {"recipe": "curve"})

    agent, _run = _agent(small_task, tmp_path, [], **{"budget.iterations": 4})
    agent.session.brain = ScriptedBrain([Proposal("plan: a broken script", CRASH), capture, capture, capture])
    agent.run_loop()
    assert agent.session.state.graph["n0001"].status == "crash"
    # Every proposal but the repair of n0001 itself (whose prompt shows that failure in full) sees it.
    later = [recall for parents, recall in seen if "n0001" not in parents]
    assert len(later) == 2
    assert all(any("RuntimeError: boom in feature engineering" in line for line in r.this_run) for r in later)


def test_a_second_run_reads_the_first_runs_records_and_starts_from_its_move_priors(tmp_path):
    task = load_task(make_task(tmp_path / "task", n=600))
    cfg = load_config(
        None, ["budget.iterations=6", "search.num_drafts=1", "search.draft_every=0", "search.fuse_every=0"]
    )
    first = create_run(task, cfg, tmp_path / "runs", run_id="first")
    Agent(open_session(first, RecipeBrain(), get_sandbox("local"))).run_loop()
    store = MemoryStore(mlguild_home() / "memory.sqlite")
    improves = [e for _, e in store.recent(50, run="first") if e.op == "improve" and e.move]
    assert improves and all(e.gain_spreads is not None or e.outcome == "failed" for e in improves)

    second = create_run(task, cfg, tmp_path / "runs", run_id="second")
    agent = Agent(open_session(second, RecipeBrain(), get_sandbox("local")))
    priors = agent.session.memory.move_priors()
    assert {e.move.split("+")[0] for e in improves} <= set(priors)
    recall = agent.session.memory.recall("improve lightgbm draft")
    assert recall.other_tasks and all("[" in line for line in recall.other_tasks)
    assert not recall.this_run  # the second run has no records of its own yet
    # --no-memory: nothing read, nothing written.
    clean_cfg = load_config(None, ["budget.iterations=1", "memory.enabled=false"])
    clean = create_run(task, clean_cfg, tmp_path / "runs", run_id="clean")
    clean_agent = Agent(open_session(clean, RecipeBrain(), get_sandbox("local")))
    assert clean_agent.session.memory.shared is None and not clean_agent.session.memory.move_priors()
    clean_agent.run_loop()
    assert store.count(run="clean") == 0


def test_move_priors_start_the_estimate_and_this_tasks_evidence_outweighs_them():
    priors = {"more_trees": MovePrior(weight=5.0, gain=1.0, log_cost=0.7, cost_weight=5.0)}
    stats = move_stats((), "maximize", priors)
    assert stats["more_trees"].tries == 0 and stats["more_trees"].prior == 3.0  # capped
    assert stats["more_trees"].gain == pytest.approx(3.0 / 4.0)
    parent = HistoryItem("n1", "draft", "scored", 0.80, {}, 10.0)
    worse = [
        HistoryItem(f"n{i}", "improve", "scored", 0.70, {"parent": "n1", "move": "more_trees"}, 20.0)
        for i in range(2, 12)
    ]
    after = move_stats((parent, *worse), "maximize", priors)
    assert after["more_trees"].gain < 0  # ten failures here beat a good record elsewhere


def test_many_tries_on_another_task_count_little_more_than_one_but_every_try_here_counts():
    from mlguild.memory.priors import move_priors

    near = TaskTraits("binary", "accuracy", 5000, 20, "tabular", 0.01, 12)  # another metric: distance 1

    def tries(run: str, n: int, traits: TaskTraits, gain: float) -> list[Experience]:
        return [
            _exp(
                f"{run}{i}", "more trees", run=run, move="more_trees", gain_spreads=gain, cost_ratio=2.0, traits=traits
            )
            for i in range(n)
        ]

    busy_elsewhere = move_priors(tries("a", 10, near, 1.0), TRAITS, max_distance=2.0)["more_trees"]
    assert busy_elsewhere.weight == pytest.approx(10 / 11)  # not 10 / 2: the other task's gain is not this one's
    assert busy_elsewhere.gain == pytest.approx(1.0) and busy_elsewhere.log_cost == pytest.approx(math.log(2.0))
    assert move_priors(tries("a", 1, near, 1.0), TRAITS, 2.0)["more_trees"].weight == pytest.approx(0.5)
    assert move_priors(tries("a", 10, TRAITS, 1.0), TRAITS, 2.0)["more_trees"].weight == pytest.approx(10.0)
    # Two runs on the other task that disagree: each counts on its own, the gain is their mean.
    both = move_priors([*tries("a", 4, near, 1.0), *tries("b", 4, near, -1.0)], TRAITS, 2.0)["more_trees"]
    assert both.weight == pytest.approx(2 * 4 / 5) and both.gain == pytest.approx(0.0)


def _task_runs(gains: dict[str, list[float]], cost_ratio: float = 2.0) -> list[Experience]:
    """One run per task of ``gains`` (task -> a gain per move m0, m1, ...): improve records on
    tasks a little unlike TRAITS (other row counts), each move's run-time ratio ``cost_ratio``."""
    records = []
    for i, (task, per_move) in enumerate(sorted(gains.items())):
        traits = dataclasses.replace(TRAITS, rows=4000 + 100 * i)
        for j, gain in enumerate(per_move):
            fields = dict(run=f"run-{task}", task=task, move=f"m{j}", gain_spreads=gain, traits=traits)
            records.append(_exp(f"{task}{j}", f"m{j}", cost_ratio=cost_ratio * (1 + j), **fields))
    return records


def test_the_store_measures_how_far_one_tasks_results_foretell_anothers():
    from mlguild.memory.priors import DEFAULT_COST_TRUST, DEFAULT_GAIN_TRUST, measure_transfer

    base = [1.0, -1.0, 0.5, -0.5, 2.0]
    agree = _task_runs({t: base for t in ("a", "b", "c", "d")})
    measured = measure_transfer(agree, "this", max_distance=2.0)
    assert measured.pairs == 20 and measured.gain == pytest.approx(1.0) and measured.cost == pytest.approx(1.0)
    # Tasks whose gains go opposite ways: the others' mean foretells nothing (clipped at 0), but
    # the moves' run times still carry over.
    flipped = _task_runs({t: [sign * g for g in base] for t, sign in (("a", 1), ("b", -1), ("c", 1), ("d", -1))})
    measured = measure_transfer(flipped, "this", 2.0)
    assert measured.gain == 0.0 and measured.cost == pytest.approx(1.0)
    # This task's own records are not evidence of transfer between tasks; with one other task
    # there is nothing to measure, and the defaults hold.
    alone = measure_transfer(_task_runs({"this": base, "a": base}), "this", 2.0)
    assert (alone.gain, alone.cost, alone.pairs) == (DEFAULT_GAIN_TRUST, DEFAULT_COST_TRUST, 0)
    # Tasks too unlike each other (beyond max_distance) are not compared.
    assert measure_transfer(agree, "this", max_distance=0.0).pairs == 0


def test_another_tasks_gains_count_as_far_as_the_store_shows_they_carry_over():
    from mlguild.memory.priors import Transfer, move_priors

    records = _task_runs({"other": [1.0]}) + _task_runs({"t": [-1.0]})  # "t" is this task, at distance 0
    records[-1] = dataclasses.replace(records[-1], traits=TRAITS, run="earlier-run-here")
    none = Transfer(gain=0.0, cost=0.5, family=0.0, pairs=20)
    prior = move_priors(records[:1], TRAITS, 2.0, task="t", transfer=none)["m0"]
    full = move_priors(records[:1], TRAITS, 2.0, task="t")["m0"]  # no transfer given: in full
    assert prior.weight == 0.0 and full.cost_weight > 0 and prior.cost_weight == pytest.approx(full.cost_weight / 2)
    assert prior.log_cost == pytest.approx(math.log(2.0))
    stats = move_stats((), "maximize", {"m0": prior})["m0"]
    assert stats.gain == 0.0 and stats.prior == 0.0 and stats.cost > 1.0  # the gain is left to this task
    # An earlier run on this very task counts in full, whatever the transfer between tasks.
    here = move_priors(records, TRAITS, 2.0, task="t", transfer=none)["m0"]
    assert here.weight == pytest.approx(1.0) and here.gain == pytest.approx(-1.0)


def test_family_priors_rank_families_within_each_run_and_order_the_first_drafts():
    from mlguild.brains.recipes.catalog import recipes_for
    from mlguild.brains.recipes.choice import family_order
    from mlguild.memory.priors import FAILED_GAIN, family_priors

    def node(run: str, family: str, score: float | None, traits: TaskTraits = TRAITS, exec_s: float = 10.0):
        outcome = "failed" if score is None else "first"
        return _exp(f"{family}-{score}", family, outcome, run=run, op="draft", recipe=family, score=score,
                    exec_s=exec_s, traits=traits)  # fmt: skip

    records = [
        # A similar task: catboost best, linear worst, xgboost failed every time.
        node("a", "lightgbm", 0.80), node("a", "lightgbm", 0.82), node("a", "catboost", 0.86, exec_s=40.0),
        node("a", "linear", 0.70, exec_s=3.0), node("a", "xgboost", None),
        # One family only: says nothing about the order of families.
        node("b", "linear", 0.99),
        # Another task type: not similar, left out.
        node("c", "linear", 5.0, TaskTraits("regression", "rmse", 5000, 20, "tabular", 0.01, 12)),
        node("c", "catboost", 9.0, TaskTraits("regression", "rmse", 5000, 20, "tabular", 0.01, 12)),
    ]  # fmt: skip
    priors = family_priors(records, TRAITS, max_distance=2.0)
    assert set(priors) == {"lightgbm", "catboost", "linear", "xgboost"}
    assert priors["catboost"].gain > priors["lightgbm"].gain > 0 > priors["linear"].gain
    assert priors["xgboost"].gain == pytest.approx(priors["linear"].gain + FAILED_GAIN)  # below the worst
    assert priors["catboost"].weight == 1.0
    assert priors["catboost"].log_cost > 0 > priors["linear"].log_cost  # slower and faster than typical
    # RMSE is minimised: the lower score ranks first.
    rmse = TaskTraits("regression", "rmse", 5000, 20, "tabular", 0.01, 12)
    assert family_priors(records, rmse, 2.0)["linear"].gain > 0
    order = family_order(recipes_for({"modality": "tabular"}), priors)
    assert order[:2] == ["catboost", "lightgbm"] and order[-2:] == ["linear", "xgboost"]
    assert family_order(["lightgbm", "linear"], {}) == ["lightgbm", "linear"]  # no memory: catalogue order
    # One run on a merely similar task is too little evidence to reorder the drafts.
    near = TaskTraits("binary", "accuracy", 5000, 20, "tabular", 0.01, 12)  # another metric: distance 1
    weak = family_priors([dataclasses.replace(r, traits=near) for r in records if r.run == "a"], TRAITS, 2.0)
    assert weak["catboost"].weight == 0.5 and weak["catboost"].gain > 0
    assert family_order(recipes_for({"modality": "tabular"}), weak) == recipes_for({"modality": "tabular"})


def test_a_second_run_drafts_first_the_family_that_ranked_best_in_the_first(tmp_path):
    from mlguild.brains.recipes.catalog import recipes_for
    from mlguild.brains.recipes.choice import family_order, family_reason

    task = load_task(make_task(tmp_path / "task", n=400))
    cfg = load_config(None, ["budget.iterations=3", "search.num_drafts=3", "search.policy=greedy"])
    first = create_run(task, cfg, tmp_path / "runs", run_id="first")
    first_agent = Agent(open_session(first, RecipeBrain(), get_sandbox("local")))
    first_agent.run_loop()
    drafts = [n for n in first_agent.session.state.graph if n.op == "draft" and n.ok]
    assert len({n.meta["recipe"] for n in drafts}) == 3
    best = max(drafts, key=lambda n: n.score or 0.0)
    chosen = first_agent.session.state.graph.best()  # the search's choice: evidence rules included
    assert chosen is not None

    second = create_run(task, load_config(None, ["budget.iterations=2"]), tmp_path / "runs", run_id="second")
    agent = Agent(open_session(second, RecipeBrain(), get_sandbox("local")))
    priors = agent.session.memory.family_priors()
    assert max(priors.items(), key=lambda kv: kv[1].gain)[0] == best.meta["recipe"]
    agent.run_loop()
    recalled, drafted = list(agent.session.state.graph)
    # First the first run's best made again (brains/recipes/earlier), then the families in the
    # order the first run ranked them, the best-ranked one not drafted yet first.
    assert recalled.meta["recalled"] == f"first/{chosen.id}" and recalled.meta["recipe"] == chosen.meta["recipe"]
    order = family_order(recipes_for(second.spec.public_dict(), agent.session.contexts.profile), priors)
    assert drafted.meta["recipe"] == next(name for name in order if name != chosen.meta["recipe"])
    assert "earlier runs" in recalled.plan
    # The draft says why it comes now when the first run ranked its family; a family that run
    # never tried (it outranks one that ranked below the mean there) has nothing to say.
    assert ("earlier runs" in drafted.plan) == bool(family_reason(drafted.meta["recipe"], priors))


def test_the_llm_prompt_shows_this_runs_records(tmp_path):
    full = f"Plan: logistic curve on x0.\n```python\n{GOOD}```\n"
    crash = f"Plan: a curve with a bug.\n```python\n{CRASH}```\n"
    llm = ScriptedLLM([crash, full], default=full)
    cfg = load_config(None, ["budget.iterations=4", "search.num_drafts=2", "search.draft_every=0", "brain.eda=false"])
    run = create_run(load_task(make_task(tmp_path / "t")), cfg, tmp_path / "runs")
    Agent(open_session(run, LLMBrain(llm, LLMBrainOptions(diff_mode=False)), get_sandbox("local"))).run_loop()
    later = [c["messages"][-1].content for c in llm.calls[2:]]
    assert later and all("# What earlier attempts showed" in p for p in later)
    assert any("boom in feature engineering" in p for p in later)


def test_a_store_that_breaks_mid_run_becomes_a_warning(small_task, tmp_path):
    agent, _run = _agent(small_task, tmp_path, [GOOD], **{"budget.iterations": 3})
    events = []
    agent.session.on_event = lambda kind, data: events.append((kind, data))
    assert agent.session.memory.shared is not None
    path = agent.session.memory.shared.store.path
    agent.session.memory.shared.store._db.close()
    with open(path, "r+b") as handle:  # the file is damaged under the run
        handle.write(b"garbage" * 4096)
    agent.run_loop()
    assert all(n.ok for n in agent.session.state.graph) and len(agent.session.state.graph) == 3
    warnings = [d["message"] for k, d in events if k == "warning"]
    assert len(warnings) == 1 and "goes on without it" in warnings[0]
    assert agent.session.memory.local.store.count() == 3


def test_resume_rebuilds_the_runs_own_memory(small_task, tmp_path):
    agent, run = _agent(small_task, tmp_path, [CRASH, GOOD], **{"budget.iterations": 3})
    agent.run_loop()
    again = Agent(open_session(run, agent.session.brain, get_sandbox("local"), policy=agent.session.policy))
    lines = again.session.memory.recall("improve boom RuntimeError").this_run
    assert again.session.memory.local.store.count() == 3 and any("boom" in line for line in lines)


def test_nothing_but_holdout_numbers_enter_the_store(small_task, tmp_path):
    agent, _run = _agent(small_task, tmp_path, [GOOD], **{"budget.iterations": 2})
    done = finish(agent.session, agent.run_loop())
    grade = done.grade["test_score"] if done.grade else None
    db = sqlite3.connect(agent.session.memory.shared.store.path)
    text = " ".join(r[0] for r in db.execute("SELECT record FROM experiences"))
    holdout = {f"{n.score}" for n in agent.session.state.graph if n.ok}
    assert any(h in text for h in holdout)
    assert grade is None or repr(grade) not in text
    assert "final" not in {r[0] for r in db.execute("SELECT op FROM experiences")}


def test_embeddings_find_a_record_that_shares_no_word_with_the_query(tmp_path):
    pytest.importorskip("sentence_transformers")
    from mlguild.memory.embed import load_embedder

    embedder = load_embedder()
    assert embedder is not None, "the [embeddings] extra is installed but its model was not found"
    plain, embedded = Retriever(MemoryStore()), Retriever(MemoryStore(), embedder)
    for i, topic in enumerate(TOPICS):
        plain.add(_exp(f"n{i:04d}", topic))
        embedded.add(_exp(f"n{i:04d}", topic))
    query = "clock zone mismatch crashed"  # no word in common with the timestamp record
    assert "n0001" not in [e.node for e in plain.search(query, 3)]
    assert embedded.search(query, 1)[0].node == "n0001"
    # Through the configuration: the run's memory embeds what it stores.
    cfg = load_config(None, ["memory.embeddings=true"]).memory
    memory = Memory.open("r", "t", TRAITS, cfg, tmp_path)
    memory.remember(_exp("n0001", TOPICS[1]))
    assert memory.warnings == [] and memory.shared is not None
    assert len(memory.shared.store.vectors(embedder.model)) == 1
    # A recall searches this run's records twice and the shared store once: one embedding.
    asked: list[list[str]] = []
    encode = embedder.encode
    memory.local.embedder.encode = lambda texts: asked.append(texts) or encode(texts)  # type: ignore[union-attr]
    memory.recall(query)
    assert asked == [[query]]


def test_memory_commands_list_search_show_transfer_and_forget(tmp_path):
    from conftest import mlguild, one_line

    store_path = tmp_path / "memory.sqlite"
    store = MemoryStore(store_path)
    base = [1.0, -1.0, 0.5, -0.5, 2.0]
    ids = [store.add(exp) for exp in _task_runs({t: base for t in ("a", "b", "c", "d")})]
    store.close()
    at = ("--store", str(store_path))
    listed = mlguild("memory", "list", *at, cwd=tmp_path)
    assert listed.returncode == 0 and all(f"run-{t}" in listed.stdout for t in "abcd")
    found = mlguild("memory", "search", "m3", *at, cwd=tmp_path)
    assert found.returncode == 0 and "m3" in found.stdout
    shown = mlguild("memory", "show", str(ids[0]), *at, cwd=tmp_path)
    assert shown.returncode == 0 and json.loads(shown.stdout)["move"] == "m0"
    # Four tasks whose moves did the same everywhere: their gains and run times carry over in full.
    transfer = one_line(mlguild("memory", "transfer", *at, cwd=tmp_path).stdout)
    assert "binary │ 4 │ 20 │ 1.00 │ 1.00 │ 0.00 │ 20" in transfer, transfer
    forgot = mlguild("memory", "forget", "--run", "run-a", *at, cwd=tmp_path)
    assert forgot.returncode == 0 and "forgot 5 records" in forgot.stdout
    missing = mlguild("memory", "transfer", "--store", str(tmp_path / "none.sqlite"), cwd=tmp_path)
    assert missing.returncode == 2 and "no memory store" in missing.stderr + missing.stdout
