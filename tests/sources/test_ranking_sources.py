"""Rankings as sources: a competition folder with no task.yaml (repeated ids in the sample
submission are a grouped ranking; MAP@k in the description and lists in the target are a
ranked list), `init csv: --task-type ranking --group COL`, and the bundled examples of both."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import as_competition_folder, mlguild, one_line

from mlguild.core.errors import TaskError
from mlguild.sources.csv_source import build_from_csv
from mlguild.sources.examples import build_example
from mlguild.sources.infer import infer_task
from mlguild.task.folder import load_task

KEYS = ("task_type", "metric", "metric_params", "id_column", "ids_unique", "key_columns", "target_columns")
KEYS += ("submission_columns", "classes", "answers_file")


@pytest.fixture(scope="module")
def ranking_examples(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ranking-examples")
    return {name: build_example(name, root / name) for name in ("fishing", "movies")}


@pytest.mark.parametrize("layout", ["mle", "flat"])
@pytest.mark.parametrize("name", ["fishing", "movies"])
def test_each_ranking_example_is_inferred_as_its_task_yaml_says(ranking_examples, tmp_path, name, layout):
    example = ranking_examples[name]
    truth = yaml.safe_load((example / "task.yaml").read_text())
    inferred = infer_task(as_competition_folder(example, tmp_path / name, layout))
    got = inferred.spec.model_dump()
    expected = {k: truth.get(k) for k in KEYS}
    if layout == "flat":
        expected["answers_file"] = None
    assert {k: got[k] for k in KEYS} == expected


def _ranking_folder(root: Path, description: str) -> Path:
    """A competition as one ships a grouped ranking: a (group, item, score) sample submission
    whose groups repeat, the label ('chosen') only in train, items repeating across groups."""
    rng = np.random.default_rng(0)
    rows = [
        {"group": f"g{g}", "item": item, "price": float(rng.uniform(1, 9)), "chosen": int(item == "b")}
        for g in range(60)
        for item in ("a", "b", "c")
    ]
    frame = pd.DataFrame(rows)
    root.mkdir(parents=True)
    train, test = frame.iloc[45:], frame.iloc[:45]
    train.to_csv(root / "train.csv", index=False)
    test.drop(columns=["chosen"]).to_csv(root / "test.csv", index=False)
    test[["group", "item"]].assign(score=0.0).to_csv(root / "sample_submission.csv", index=False)
    (root / "description.md").write_text(description)
    return root


def test_a_grouped_ranking_folder_is_inferred_from_its_repeated_ids(tmp_path):
    folder = _ranking_folder(
        tmp_path / "clicks", "# Clicks\n## Evaluation\nSubmissions are scored by GAUC: the AUC per group, averaged.\n"
    )
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.task_type, spec.metric, spec.id_column, spec.ids_unique) == ("ranking", "gauc", "group", False)
    assert (spec.key_columns, spec.target_columns, spec.prediction_columns) == (["item"], ["chosen"], ["score"])
    assert any("a grouped ranking" in note for note in inferred.notes)

    ndcg = infer_task(_ranking_folder(tmp_path / "search", "Evaluated on NDCG@5 within each query.\n")).spec
    assert (ndcg.metric, ndcg.metric_params) == ("ndcg_at_k", {"k": 5})


def test_a_ranking_folder_runs_a_dry_run_end_to_end(tmp_path):
    folder = _ranking_folder(tmp_path / "clicks", "Scored by nDCG@2 within each group.\n")
    done = mlguild("run", str(folder), "--dry-run", "-n", "2", "--sandbox", "local", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ranking" in (folder / "task.yaml").read_text()


def test_a_single_label_scored_by_map_at_k_is_multiclass(tmp_path):
    root = tmp_path / "fertilizer"
    root.mkdir()
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"id": range(300), "x": rng.normal(size=300), "crop": rng.choice(list("pqrstu"), 300)})
    frame.iloc[60:].to_csv(root / "train.csv", index=False)
    frame.iloc[:60].drop(columns=["crop"]).to_csv(root / "test.csv", index=False)
    pd.DataFrame({"id": frame["id"][:60], "crop": "p q r"}).to_csv(root / "sample_submission.csv", index=False)
    (root / "description.md").write_text("## Evaluation\nSubmissions are evaluated according to MAP@3.\n")
    spec = infer_task(root).spec
    assert (spec.task_type, spec.metric, spec.metric_params, spec.target_columns) == (
        "multiclass",
        "map_at_k",
        {"k": 3},
        ["crop"],
    )


def _long_choices(path: Path) -> Path:
    """Ecdat's Fishing, as the fishing example holds it: one row per angler and mode."""
    from mlguild.sources.examples import EXAMPLES

    frame, _ = EXAMPLES["fishing"].load()
    frame.to_csv(path, index=False)
    return path


def test_init_csv_ranking_with_group_writes_a_grouped_task(tmp_path):
    csv = _long_choices(tmp_path / "fishing.csv")
    done = mlguild(
        "init", f"csv:{csv}", "--target", "chosen", "--task-type", "ranking", "--group", "angler",
        "--metric", "ndcg@3", "--out", str(tmp_path / "task"), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    spec = load_task(tmp_path / "task").spec
    assert (spec.task_type, spec.id_column, spec.ids_unique, spec.key_columns) == ("ranking", "angler", False, ["mode"])
    assert (spec.metric, spec.metric_params, spec.submission_columns) == (
        "ndcg_at_k",
        {"k": 3},
        ["angler", "mode", "chosen"],
    )
    train = pd.read_csv(tmp_path / "task" / "public" / "train.csv")
    test = pd.read_csv(tmp_path / "task" / "public" / "test.csv")
    assert not set(train["angler"]) & set(test["angler"])  # the test set holds whole groups
    answers = pd.read_csv(tmp_path / "task" / "private" / "answers.csv")
    assert list(answers.columns) == ["angler", "mode", "chosen"] and len(answers) == len(test)


def test_init_csv_ranking_of_labels_is_gauc_and_of_lists_is_map(tmp_path):
    csv = _long_choices(tmp_path / "fishing.csv")
    frame = pd.read_csv(csv)
    frame["took"] = np.where(frame.pop("chosen") == 1, "yes", "no")
    frame.to_csv(tmp_path / "labels.csv", index=False)
    spec = load_task(
        build_from_csv(tmp_path / "labels.csv", tmp_path / "a", target="took", task_type="ranking", group="angler")
    ).spec
    assert (spec.metric, spec.positive_label) == ("gauc", "yes")

    baskets = pd.DataFrame(
        {
            "id": range(100),
            "before": ["1 2 3"] * 100,
            "after": [" ".join(map(str, range(i % 7, i % 7 + 3))) for i in range(100)],
        }
    )
    baskets.to_csv(tmp_path / "baskets.csv", index=False)
    lists = load_task(
        build_from_csv(tmp_path / "baskets.csv", tmp_path / "b", target="after", task_type="ranking", metric="map@3")
    ).spec
    assert (lists.task_type, lists.metric, lists.metric_params, lists.ids_unique) == (
        "ranking",
        "map_at_k",
        {"k": 3},
        True,
    )


def test_init_csv_ranking_without_a_group_or_lists_says_what_to_pass(tmp_path):
    csv = _long_choices(tmp_path / "fishing.csv")
    with pytest.raises(TaskError) as err:
        build_from_csv(csv, tmp_path / "t", target="chosen", task_type="ranking")
    assert "--group" in str(err.value) and err.value.fix == "pass --group COLUMN"
    with pytest.raises(TaskError) as err:
        build_from_csv(csv, tmp_path / "u", target="chosen", task_type="ranking", group="anglr")
    assert "did you mean 'angler'" in one_line(str(err.value))
