import pandas as pd
import pytest
import yaml
from conftest import make_task

from mlguild.core.errors import TaskError
from mlguild.sources import init_task
from mlguild.sources.columns import infer_task_type
from mlguild.task.folder import load_task


def test_bundled_examples_load(example_tasks):
    for name, root in example_tasks.items():
        task = load_task(root)
        assert task.spec.name == name
        assert task.answers_path is not None
        test = pd.read_csv(task.test_path)
        answers = pd.read_csv(task.answers_path)
        assert len(test) == len(answers) and not set(task.spec.target_columns) & set(test.columns)
    assert load_task(example_tasks["reviews"]).spec.modality == "text"
    assert load_task(example_tasks["digits"]).spec.modality == "image_array"


def test_examples_are_deterministic(tmp_path, example_tasks):
    again = init_task("example:churn", tmp_path / "churn")
    assert (again / "public" / "train.csv").read_bytes() == (
        example_tasks["churn"] / "public" / "train.csv"
    ).read_bytes()


def test_unknown_example(tmp_path):
    with pytest.raises(TaskError, match="no bundled example") as info:
        init_task("example:nope", tmp_path / "x")
    assert "churn" in info.value.fix


@pytest.mark.parametrize(
    "breakage, message",
    [
        (lambda r: (r / "task.yaml").unlink(), "no task.yaml"),
        (lambda r: (r / "public" / "test.csv").unlink(), "test file"),
        (lambda r: (r / "description.md").unlink(), "description.md"),
        (lambda r: (r / "task.yaml").write_text("name: [unclosed"), "not valid YAML"),
        (lambda r: _edit(r, target_columns=["nope"]), "lacks column"),
        (lambda r: _edit(r, metric="wat"), "unknown metric|wat"),
        (lambda r: _edit(r, metric="rmse", direction="maximize"), "contradicts"),
        (lambda r: _edit(r, submission_columns=["y", "id"]), "id column"),
        (lambda r: (r / "public" / "train.csv").write_bytes(b"\xff\xfe\x00garbage"), "cannot read"),
        (lambda r: (r / "public" / "train.csv").write_text(""), "empty"),
        (lambda r: (r / "public" / "sample_submission.csv").write_text("id,pred\n1,0\n"), "sample submission header"),
    ],
)
def test_malformed_task_folders_say_what_and_how(tmp_path, breakage, message):
    root = make_task(tmp_path / "t")
    breakage(root)
    with pytest.raises(TaskError) as info:
        load_task(root)
    import re

    assert re.search(message, str(info.value)), str(info.value)
    assert info.value.fix


def test_missing_folder(tmp_path):
    with pytest.raises(TaskError, match="does not exist"):
        load_task(tmp_path / "nothing")


def _edit(root, **changes):
    spec = yaml.safe_load((root / "task.yaml").read_text())
    spec.update(changes)
    (root / "task.yaml").write_text(yaml.safe_dump(spec))


def test_csv_source_infers_id_type_and_metric(tmp_path):
    frame = pd.DataFrame(
        {
            "customer_id": [f"c{i}" for i in range(100)],
            "age": range(100),
            "plan": ["a", "b"] * 50,
            "churned": ["yes"] * 30 + ["no"] * 70,
        }
    )
    frame.to_csv(tmp_path / "data.csv", index=False)
    root = init_task(f"csv:{tmp_path / 'data.csv'}", tmp_path / "task", target="churned")
    spec = load_task(root).spec
    assert spec.id_column == "customer_id" and spec.task_type == "binary" and spec.metric == "roc_auc"
    assert spec.positive_label == "yes"
    answers = pd.read_csv(root / "private" / "answers.csv")
    assert len(answers) == 20 and set(answers.columns) == {"customer_id", "churned"}


def test_csv_source_creates_an_id_and_multiclass_logloss(tmp_path):
    frame = pd.DataFrame({"x": range(90), "kind": ["red", "green", "blue"] * 30})
    frame.to_csv(tmp_path / "d.csv", index=False)
    root = init_task(f"csv:{tmp_path / 'd.csv'}", tmp_path / "t", target="kind")
    spec = load_task(root).spec
    assert spec.id_column == "id" and spec.metric == "logloss"
    assert spec.submission_columns == ["id", "blue", "green", "red"]


def test_csv_source_creates_an_id_beside_a_repeating_id_column(tmp_path):
    # Panel data: "id" names a subject seen several times, so it cannot identify a row.
    frame = pd.DataFrame({"id": [i // 3 for i in range(90)], "x": range(90), "y": [i % 2 for i in range(90)]})
    frame.to_csv(tmp_path / "panel.csv", index=False)
    root = init_task(f"csv:{tmp_path / 'panel.csv'}", tmp_path / "t", target="y")
    spec = load_task(root).spec
    assert spec.id_column == "row_id"
    train = pd.read_csv(root / "public" / "train.csv")
    assert train["row_id"].is_unique and "id" in train.columns  # the subject column is kept as data


def test_csv_source_with_test_file_holding_answers(tmp_path):
    pd.DataFrame({"id": range(50), "x": range(50), "y": [1.5 * i for i in range(50)]}).to_csv(
        tmp_path / "tr.csv", index=False
    )
    pd.DataFrame({"id": range(50, 60), "x": range(10), "y": range(10)}).to_csv(tmp_path / "te.csv", index=False)
    root = init_task(f"csv:{tmp_path / 'tr.csv'}", tmp_path / "t", target="y", test=tmp_path / "te.csv")
    spec = load_task(root).spec
    assert spec.task_type == "regression" and spec.metric == "rmse"
    assert "y" not in pd.read_csv(root / "public" / "test.csv").columns
    assert len(pd.read_csv(root / "private" / "answers.csv")) == 10


@pytest.mark.parametrize(
    "content, target, message",
    [
        ("a\n1\n4\n", "a", "single column"),  # (a ';'-separated file is read: tests/cli/test_first_hour.py)
        ("a,b\n1,2\n", "zzz", "no column"),
        ("a,b\n", "b", "no data rows"),
    ],
)
def test_csv_source_errors(tmp_path, content, target, message):
    (tmp_path / "bad.csv").write_text(content)
    with pytest.raises(TaskError, match=message):
        init_task(f"csv:{tmp_path / 'bad.csv'}", tmp_path / "t", target=target)


def test_csv_source_needs_a_target(tmp_path):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    with pytest.raises(TaskError, match="target"):
        init_task(f"csv:{tmp_path / 'd.csv'}", tmp_path / "t")


def test_task_type_inference():
    assert infer_task_type(pd.Series(["1", "0", "1"])) == "binary"
    assert infer_task_type(pd.Series([str(i % 5) for i in range(50)])) == "multiclass"
    assert infer_task_type(pd.Series([str(i * 0.37) for i in range(50)])) == "regression"


def test_csv_source_rejects_unknown_task_types_and_constant_targets(tmp_path):
    pd.DataFrame({"x": range(30), "y": [1] * 30}).to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(TaskError, match="single value"):
        init_task(f"csv:{tmp_path / 'd.csv'}", tmp_path / "t", target="y")
    with pytest.raises(TaskError, match="not one of"):
        init_task(f"csv:{tmp_path / 'd.csv'}", tmp_path / "t2", target="y", task_type="rnking")
    with pytest.raises(TaskError, match="--group"):  # ranking needs the group column (or lists)
        init_task(f"csv:{tmp_path / 'd.csv'}", tmp_path / "t3", target="y", task_type="ranking")
