"""The MLE-bench gauntlet: every competition's public folder (a tiny synthetic copy from
``benchmarks/gauntlet_mlebench.yaml``) read by inference as ``mlguild run FOLDER`` reads it. None
may come out a wrong task stated with confidence; the share right is reported, and the docs'
table must be the one the script makes now."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import gauntlet_mlebench as gauntlet

from mlguild.core.errors import TaskError
from mlguild.sources.infer import infer_task


@pytest.fixture(scope="module")
def verdicts() -> list[gauntlet.Verdict]:
    return gauntlet.run_all()


def test_no_competition_gets_a_wrong_task(verdicts: list[gauntlet.Verdict]) -> None:
    wrong = [f"{v.competition}: expected {v.expected}, inferred {v.inferred}" for v in verdicts if v.verdict == "wrong"]
    assert not wrong, "\n".join(wrong)
    print(gauntlet.summary(verdicts))  # the share right, shown with -s


def test_every_mlebench_competition_is_covered(verdicts: list[gauntlet.Verdict]) -> None:
    # openai/mle-bench's mlebench/competitions/ held these 82 when the specs were written
    assert len(verdicts) == 82
    lite = [v for v in verdicts if v.lite]
    assert len(lite) == 22
    # the tabular and text ones of the lite set whose files are CSVs are read right
    right = {v.competition for v in verdicts if v.verdict == "right"}
    for name in ("spooky-author-identification", "tabular-playground-series-dec-2021", "leaf-classification",
                 "jigsaw-toxic-comment-classification-challenge", "nomad2018-predict-transparent-conductors"):  # fmt: skip
        assert name in right


def test_refusals_are_one_line(verdicts: list[gauntlet.Verdict]) -> None:
    for v in verdicts:
        if v.verdict == "refused":
            assert "\n" not in v.inferred and len(v.inferred) < 400, v.competition


def test_the_docs_table_is_current(verdicts: list[gauntlet.Verdict]) -> None:
    page = gauntlet.DOCS.read_text()
    assert gauntlet.summary(verdicts) in page
    assert gauntlet.table(verdicts) in page, "regenerate: python benchmarks/gauntlet_mlebench.py --docs"


def test_a_spec_folder_is_written_as_mlebench_lays_it_out(tmp_path: Path) -> None:
    spec = gauntlet.load_specs()["aptos2019-blindness-detection"]
    folder = gauntlet.write_folder("aptos2019-blindness-detection", spec, tmp_path)
    public = folder / "prepared" / "public"
    assert sorted(p.name for p in public.iterdir()) == [
        "description.md", "sample_submission.csv", "test.csv", "test_images", "train.csv", "train_images",
    ]  # fmt: skip
    assert not (folder / "prepared" / "task.yaml").exists()
    train, test, sample = [
        (public / f).read_text().splitlines() for f in ("train.csv", "test.csv", "sample_submission.csv")
    ]
    assert train[0] == "id_code,diagnosis" and test[0] == "id_code" and sample[0] == "id_code,diagnosis"
    assert [row.split(",")[0] for row in sample[1:]] == test[1:]  # the sample submission lists the test rows
    assert not {row.split(",")[0] for row in train[1:]} & set(test[1:])  # train and test ids never meet


@pytest.mark.parametrize(
    ("evaluation", "said"),
    [
        ("Submissions are evaluated on the Log of the Mean Absolute Error, averaged across types.", "log of the MAE"),
        ("Predictions are evaluated by the Kendall tau correlation between predicted and true orders.", "Kendall"),
        ("The evaluation metric for this competition is Mean F1-Score.", r"Mean F1.*is ambiguous"),
        ("Submissions are evaluated on the weighted AUC.", "weighted AUC"),
        ("Submissions are evaluated on a modified version of the F1 Score.", "modified"),
        ("Scored as the mean absolute error of the pressures. The expiratory phase is not scored.", "unscored"),
    ],
)
def test_a_metric_mlguild_lacks_is_refused_not_read_as_a_registered_one(
    tmp_path: Path, evaluation: str, said: str
) -> None:
    public = tmp_path / "comp" / "public"
    public.mkdir(parents=True)
    (public / "train.csv").write_text("id,x,y\n" + "".join(f"{i},{i % 7},{i % 3}.5\n" for i in range(30)))
    (public / "test.csv").write_text("id,x\n" + "".join(f"{i},{i % 5}\n" for i in range(30, 40)))
    (public / "sample_submission.csv").write_text("id,y\n" + "".join(f"{i},0\n" for i in range(30, 40)))
    (public / "description.md").write_text(f"# comp\n\n## Evaluation\n\n{evaluation}\n")
    with pytest.raises(TaskError, match=said):
        infer_task(tmp_path / "comp")
    assert infer_task(tmp_path / "comp", metric="mae").spec.metric == "mae"  # --metric decides instead


def test_one_hot_outcome_columns_scored_by_log_loss_are_a_log_loss_over_the_columns(tmp_path: Path) -> None:
    public = tmp_path / "comp" / "public"
    public.mkdir(parents=True)
    header = "id,x,a,b,c\n"
    (public / "train.csv").write_text(
        header + "".join(f"{i},{i % 7},{int(i % 3 == 0)},{int(i % 3 == 1)},{int(i % 3 == 2)}\n" for i in range(30))
    )
    (public / "test.csv").write_text("id,x\n" + "".join(f"{i},{i % 5}\n" for i in range(30, 40)))
    (public / "sample_submission.csv").write_text(
        "id,a,b,c\n" + "".join(f"{i},0.33,0.33,0.34\n" for i in range(30, 40))
    )
    (public / "description.md").write_text("# comp\n\n## Evaluation\n\nSubmissions are evaluated on the log loss.\n")
    spec = infer_task(tmp_path / "comp").spec  # lmsys: winner_model_a, winner_model_b, winner_tie
    assert (spec.metric, spec.target_columns, spec.task_type) == ("logloss_columns", ["a", "b", "c"], "binary")
    # the same columns scored by AUC are several binary targets, as before
    (public / "description.md").write_text("# comp\n\n## Evaluation\n\nEvaluated on mean column-wise ROC AUC.\n")
    assert infer_task(tmp_path / "comp").spec.metric == "mean_columnwise_roc_auc"


def test_a_train_file_named_otherwise_is_the_one_csv_beside_the_test_file(tmp_path: Path) -> None:
    public = tmp_path / "comp" / "public"
    public.mkdir(parents=True)
    (public / "labels.csv").write_text("key,x,fare\n" + "".join(f"k{i},{i % 7},{i % 9}.5\n" for i in range(30)))
    (public / "test.csv").write_text("key,x\n" + "".join(f"k{i},{i % 5}\n" for i in range(30, 40)))
    (public / "sample_submission.csv").write_text("key,fare\n" + "".join(f"k{i},1\n" for i in range(30, 40)))
    (public / "description.md").write_text("# comp\n\n## Evaluation\n\nThe root mean squared error.\n")
    spec = infer_task(tmp_path / "comp").spec
    assert (spec.train_file, spec.target_columns, spec.metric) == ("labels.csv", ["fare"], "rmse")
    (public / "test.csv").unlink()  # the sample submission alone lists the test rows
    with pytest.raises(TaskError, match=r"no CSV of test rows in .* besides sample_submission\.csv and labels\.csv"):
        infer_task(tmp_path / "comp")
    (public / "extra.csv").write_text("key,y\nk1,2\n")  # two candidates: which is train is not guessed
    with pytest.raises(TaskError, match="cannot tell which file is the train file"):
        infer_task(tmp_path / "comp")


def test_a_metric_named_again_in_known_words_is_the_known_one(tmp_path: Path) -> None:
    public = tmp_path / "comp" / "public"
    public.mkdir(parents=True)
    (public / "train.csv").write_text("id,x,y\n" + "".join(f"{i},{i % 7},{'abc'[i % 3]}\n" for i in range(30)))
    (public / "test.csv").write_text("id,x\n" + "".join(f"{i},{i % 5}\n" for i in range(30, 40)))
    (public / "sample_submission.csv").write_text("id,y\n" + "".join(f"{i},a\n" for i in range(30, 40)))
    evaluation = "Submissions are evaluated on MeanFScore, which at Kaggle is actually a micro-averaged F1-score."
    (public / "description.md").write_text(f"# comp\n\n## Evaluation\n\n{evaluation}\n")
    # micro F1 over one label a row counts each row once: it is accuracy
    assert infer_task(tmp_path / "comp").spec.metric == "accuracy"
    (public / "description.md").write_text("# comp\n\n## Evaluation\n\nEvaluated on MeanFScore over the labels.\n")
    with pytest.raises(TaskError, match=r"is ambiguous: Kaggle.s Mean F1"):
        infer_task(tmp_path / "comp")
