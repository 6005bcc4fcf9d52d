"""Ranking submissions as the scorer sees them: a ranked list with a duplicate item or a
missing query is refused with its reason; a grouped ranking's (group, item) rows must keep
the sample's order; one score column is scored against the one target whatever it is called;
the floor of a list is its most popular items; the firewall seals whole groups and queries."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlguild.config import FirewallConfig
from mlguild.core.errors import SubmissionError
from mlguild.firewall.confirm import confirm_ids, held_answers, split_predictions
from mlguild.firewall.workspace import build_workspace
from mlguild.scoring.floors import write_prior_submission
from mlguild.scoring.scorer import Scorer
from mlguild.sources.examples import build_example
from mlguild.task.folder import TaskSpec, load_task
from mlguild.util.exact_csv import read_csv_exact

LISTS = TaskSpec(
    name="baskets", task_type="ranking", metric="map_at_k", metric_params={"k": 3}, id_column="query",
    target_columns=["relevant"], submission_columns=["query", "predicted"],
)  # fmt: skip
GROUPED = TaskSpec(
    name="clicks", task_type="ranking", metric="ndcg_at_k", metric_params={"k": 2}, id_column="group",
    ids_unique=False, key_columns=["item"], target_columns=["chosen"], submission_columns=["group", "item", "score"],
)  # fmt: skip


def _write(path: Path, rows: list[tuple]) -> Path:
    path.write_text("\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return path


@pytest.fixture
def list_scorer(tmp_path) -> Scorer:
    answers = _write(tmp_path / "answers.csv", [("query", "relevant"), ("q1", "a b"), ("q2", "c"), ("q3", "d e f")])
    return Scorer.from_file(LISTS, answers)


def test_a_ranked_list_is_scored_against_the_target_of_another_name(list_scorer, tmp_path):
    perfect = _write(tmp_path / "p.csv", [("query", "predicted"), ("q1", "a b"), ("q2", "c x"), ("q3", "d e f")])
    assert list_scorer.score(perfect).value == pytest.approx(1.0)
    shuffled = _write(tmp_path / "s.csv", [("query", "predicted"), ("q3", "d e f"), ("q1", "a b"), ("q2", "c x")])
    assert list_scorer.score(shuffled).value == pytest.approx(1.0)  # matched by query id


def test_a_list_naming_an_item_twice_is_refused_with_its_reason(list_scorer, tmp_path):
    doubled = _write(tmp_path / "d.csv", [("query", "predicted"), ("q1", "a a b"), ("q2", "c"), ("q3", "d")])
    with pytest.raises(SubmissionError) as err:
        list_scorer.score(doubled)
    assert err.value.reason == "duplicate_item"
    assert "'q1'" in err.value.message and "'a' more than once" in err.value.message
    with pytest.raises(SubmissionError) as err:  # validating a test submission refuses it too
        list_scorer.validate(doubled)
    assert err.value.reason == "duplicate_item"


def test_a_list_submission_missing_a_query_is_refused_with_its_reason(list_scorer, tmp_path):
    short = _write(tmp_path / "m.csv", [("query", "predicted"), ("q1", "a b"), ("q3", "d")])
    with pytest.raises(SubmissionError) as err:
        list_scorer.score(short)
    assert err.value.reason == "missing_ids" and "'q2'" in err.value.message


def test_grouped_rows_keep_the_sample_order_and_their_items(tmp_path):
    answers = _write(
        tmp_path / "answers.csv",
        [("group", "item", "chosen"), ("g1", "a", 1), ("g1", "b", 0), ("g2", "a", 0), ("g2", "b", 1)],
    )
    scorer = Scorer.from_file(GROUPED, answers)
    good = _write(tmp_path / "g.csv", [("group", "item", "score"), ("g1", "a", 0.9), ("g1", "b", 0.1), ("g2", "a", 0.2), ("g2", "b", 0.7)])  # fmt: skip
    assert scorer.score(good).value == pytest.approx(1.0)
    swapped = _write(tmp_path / "w.csv", [("group", "item", "score"), ("g1", "b", 0.1), ("g1", "a", 0.9), ("g2", "a", 0.2), ("g2", "b", 0.7)])  # fmt: skip
    with pytest.raises(SubmissionError) as err:  # the same scores, items swapped within a group
        scorer.score(swapped)
    assert err.value.reason == "reordered" and "item 'b'" in err.value.message


def test_the_floor_of_a_ranked_list_is_its_most_popular_items(tmp_path):
    train = _write(
        tmp_path / "train.csv", [("query", "relevant"), ("a", "x y"), ("b", "y z"), ("c", "y x w"), ("d", "v")]
    )
    sample = _write(tmp_path / "sample.csv", [("query", "predicted"), ("e", ""), ("f", "")])
    assert write_prior_submission(LISTS, train, sample, tmp_path / "prior.csv")
    prior = read_csv_exact(tmp_path / "prior.csv")
    assert prior["predicted"].tolist() == ["y x z", "y x z"]  # k = 3, most listed first


@pytest.mark.parametrize("name", ["fishing", "movies"])
def test_the_firewall_seals_whole_groups_and_queries(tmp_path, name):
    task = load_task(build_example(name, tmp_path / name))
    spec = task.spec
    ws = build_workspace(task, tmp_path / "run", FirewallConfig())
    train = read_csv_exact(ws.data_dir / spec.train_file)
    holdout = read_csv_exact(ws.data_dir / "holdout.csv")
    # every row of the inputs file, the confirmation split's (hidden among them) included
    answers = held_answers(ws.data_dir, ws.holdout_answers, spec.id_column)
    sample = read_csv_exact(ws.data_dir / "holdout_sample_submission.csv")
    assert len(holdout) and not set(train[spec.id_column]) & set(holdout[spec.id_column])
    assert spec.target_columns[0] not in holdout.columns
    assert list(answers.columns) == [spec.id_column, *spec.key_columns, *spec.target_columns]
    for key in [spec.id_column, *spec.key_columns]:  # the holdout sample lists the holdout's own rows
        assert sample[key].tolist() == holdout[key].tolist() == answers[key].tolist()
    if not spec.ids_unique:  # every group of the holdout is there whole
        full = read_csv_exact(task.train_path)
        sizes = full[full[spec.id_column].isin(set(holdout[spec.id_column]))].groupby(spec.id_column).size()
        assert (holdout.groupby(spec.id_column).size().sort_index() == sizes.sort_index()).all()
    # the constant template scores (the floor), so answers and keys agree row for row
    confirm = confirm_ids(ws.data_dir, ws.sealed_dir, spec.id_column)
    with split_predictions(ws.data_dir / "holdout_sample_submission.csv", confirm, spec.id_column) as (part, _):
        assert Scorer.from_file(spec, ws.holdout_answers).score(part).value < 0.5
