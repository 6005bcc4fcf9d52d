import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import make_task

from mlguild.config import FirewallConfig
from mlguild.core.errors import FirewallError, TaskError
from mlguild.firewall.confirm import held_answers
from mlguild.firewall.verifier import verify_workspace
from mlguild.firewall.workspace import HOLDOUT_INPUTS, Workspace, build_workspace, split_holdout
from mlguild.task.folder import load_task
from mlguild.util.exact_csv import read_csv_exact

# An independent search, written without the verifier's code: for every CSV in the workspace
# and every column under any name, do that column's values reproduce the sealed labels on the
# sealed ids it lists? Exact reproduction on a non-constant column means a leak (renamed or not).
SEARCH_SCRIPT = r"""
import csv, sys
from pathlib import Path
ws, sealed, idc = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
targets = sys.argv[4].split(",")
secret = {}
for f in sealed.iterdir():
    for row in csv.DictReader(open(f, newline="")):
        secret[row[idc]] = [row[t] for t in targets if t in row]
hits = []
for f in ws.rglob("*.csv"):
    rows = [r for r in csv.DictReader(open(f, newline="")) if r.get(idc) in secret]
    if len(rows) < 20:
        continue
    for col in rows[0]:
        values = [r[col] for r in rows]
        if len(set(values)) < 2:
            continue      # a constant column carries no label information
        for k in range(len(targets)):
            truth = [secret[r[idc]][k] for r in rows if len(secret[r[idc]]) > k]
            if len(truth) == len(values) and all(a == b for a, b in zip(values, truth)):
                hits.append(f"{f.name}: column {col} reproduces sealed {targets[k]}")
print("\\n".join(hits))
sys.exit(1 if hits else 0)
"""


def _build(task_dir: Path, tmp_path: Path, **cfg) -> tuple[Workspace, object]:
    task = load_task(task_dir)
    run = tmp_path / "run"
    run.mkdir()
    return build_workspace(task, run, FirewallConfig(**cfg)), task


@pytest.mark.parametrize("name", ["churn", "reviews", "ames", "digits"])
def test_bundled_workspaces_hold_no_sealed_label(example_tasks, tmp_path, name):
    ws, task = _build(example_tasks[name], tmp_path)
    spec = task.spec
    report = verify_workspace(ws.run_dir, spec.id_column, spec.target_columns)
    assert report.ok, report.problems
    assert report.checked_files >= 7
    # The workspace has no file under sealed names, and no path into sealed/.
    assert not any(p.name in ("holdout_answers.csv", "test_answers.csv", "answers.csv") for p in ws.data_dir.rglob("*"))
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            SEARCH_SCRIPT,
            str(ws.data_dir),
            str(ws.sealed_dir),
            spec.id_column,
            ",".join(spec.target_columns),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout
    # Row accounting: train + holdout = original train; holdout inputs carry no label column.
    m = ws.manifest()["split"]
    original = read_csv_exact(task.train_path)
    assert m["train_rows"] + m["holdout_rows"] + m["confirm_rows"] == len(original)
    holdout = read_csv_exact(ws.data_dir / HOLDOUT_INPUTS)
    assert not set(spec.target_columns) & set(holdout.columns)
    # The holdout inputs hold the holdout rows and the confirmation rows, each sealed in its order.
    answers = held_answers(ws.data_dir, ws.holdout_answers, spec.id_column)
    assert answers[spec.id_column].tolist() == holdout[spec.id_column].tolist()


def test_verifier_catches_a_planted_leak(small_task, tmp_path):
    ws, _task = _build(small_task, tmp_path)
    leak = read_csv_exact(ws.holdout_answers)
    target = ws.data_dir / "extra_features.csv"
    target.parent.chmod(0o755)
    leak.assign(x=1).to_csv(target, index=False)
    report = verify_workspace(ws.run_dir, "id", ["y"])
    assert not report.ok
    text = " ".join(report.problems)
    assert "extra_features.csv" in text and "matches the sealed labels" in text


def test_independent_search_finds_a_renamed_leak(small_task, tmp_path):
    ws, _ = _build(small_task, tmp_path)
    leak = read_csv_exact(ws.holdout_answers).rename(columns={"y": "feature_7"})
    ws.data_dir.chmod(0o755)
    leak.to_csv(ws.data_dir / "more.csv", index=False)
    result = subprocess.run(
        [sys.executable, "-c", SEARCH_SCRIPT, str(ws.data_dir), str(ws.sealed_dir), "id", "y"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and "feature_7" in result.stdout
    report = verify_workspace(ws.run_dir, "id", ["y"])
    assert any("feature_7" in p and "exact copy" in p for p in report.problems)


def test_verifier_catches_a_changed_file(small_task, tmp_path):
    ws, _ = _build(small_task, tmp_path)
    path = ws.data_dir / "train.csv"
    path.chmod(0o644)
    path.write_text(path.read_text() + "zzz,1,1,1,1\n")
    report = verify_workspace(ws.run_dir, "id", ["y"])
    assert not report.ok and any("changed" in p for p in report.problems)


def test_split_is_seeded_and_stratified():
    labels = pd.Series(["a"] * 900 + ["b"] * 100)
    m1 = split_holdout(labels, 0.2, 10_000, seed=3, stratify=True)
    m2 = split_holdout(labels, 0.2, 10_000, seed=3, stratify=True)
    m3 = split_holdout(labels, 0.2, 10_000, seed=4, stratify=True)
    assert (m1 == m2).all() and not (m1 == m3).all()
    assert m1.sum() == 200 and labels[m1].value_counts()["b"] == 20
    rare = pd.Series(["a"] * 50 + ["b"])
    assert not split_holdout(rare, 0.5, 100, 0, True)[50]  # the only "b" stays in train


def test_holdout_size_is_configurable_and_capped(small_task, tmp_path):
    ws, _ = _build(small_task, tmp_path, holdout_fraction=0.3, max_holdout_rows=20)
    assert ws.manifest()["split"]["holdout_rows"] == 20


def test_ids_keep_their_exact_text(tmp_path):
    root = make_task(tmp_path / "t")
    train = pd.read_csv(root / "public" / "train.csv", dtype=str)
    train["id"] = [f"{i:03d}" for i in range(len(train))]
    train.to_csv(root / "public" / "train.csv", index=False)
    ws, _ = _build(root, tmp_path)
    ids = read_csv_exact(ws.data_dir / "train.csv")["id"].tolist() + read_csv_exact(ws.holdout_answers)["id"].tolist()
    assert "000" in ids and "007" in ids


def test_duplicate_ids_are_a_clear_error(tmp_path):
    root = make_task(tmp_path / "t")
    train = pd.read_csv(root / "public" / "train.csv", dtype=str)
    train.loc[5, "id"] = train.loc[6, "id"]
    train.to_csv(root / "public" / "train.csv", index=False)
    with pytest.raises(TaskError, match="not unique"):
        _build(root, tmp_path)


def test_workspace_is_not_built_twice(small_task, tmp_path):
    ws, task = _build(small_task, tmp_path)
    with pytest.raises(FirewallError):
        build_workspace(task, ws.run_dir, FirewallConfig())


@pytest.mark.parametrize(
    "breakage, message",
    [
        (lambda r: _edit_train(r, lambda f: f.assign(y=f["y"].where(f.index % 4 != 0, ""))), "empty 'y'"),
        (lambda r: _edit_train(r, lambda f: f.assign(y="1")), "single value"),
        (lambda r: _edit_yaml(r, positive_label="yes"), "positive_label 'yes' is not among the labels"),
        (lambda r: (r / "private" / "answers.csv").write_text("id,y\nr00000,1\n"), "test answers"),
        (lambda r: (r / "private" / "answers.csv").write_text("id,label\n"), "test answers"),
        # The data's own copy of the target (e.g. a close price beside an adjusted close equal to it).
        (lambda r: _edit_train(r, lambda f: f.assign(y_copy=f["y"].astype(float))), "'y_copy' equals the target 'y'"),
    ],
)
def test_labels_and_answers_are_checked_before_any_work(tmp_path, breakage, message):
    from mlguild.config import load_config
    from mlguild.rundir.folder import create_run

    root = make_task(tmp_path / "t")
    breakage(root)
    with pytest.raises(TaskError, match=message):
        create_run(load_task(root), load_config(), tmp_path / "runs")
    assert not list((tmp_path / "runs").glob("*"))  # nothing half-built is left behind


def _edit_train(root, change):
    frame = pd.read_csv(root / "public" / "train.csv", dtype=str, keep_default_na=False)
    change(frame).to_csv(root / "public" / "train.csv", index=False)


def _edit_yaml(root, **changes):
    import yaml

    spec = yaml.safe_load((root / "task.yaml").read_text())
    spec.update(changes)
    (root / "task.yaml").write_text(yaml.safe_dump(spec))


def test_repeated_ids_are_split_by_whole_groups(tmp_path):
    """Ranking data: a user's rows are all in train or all in the holdout; the run starts."""
    import numpy as np
    import yaml

    from mlguild.config import load_config
    from mlguild.rundir.folder import create_run

    rng = np.random.default_rng(0)
    users = np.repeat([f"u{i:03d}" for i in range(120)], 8)
    frame = pd.DataFrame({"user": users, "item": rng.integers(0, 50, len(users)), "score": rng.normal(size=len(users))})
    frame["click"] = (frame["score"] + rng.normal(size=len(frame)) > 0).astype(int)
    root = tmp_path / "rank"
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    train, test = frame[frame.user < "u100"], frame[frame.user >= "u100"]
    train.to_csv(root / "public" / "train.csv", index=False)
    test.drop(columns=["click"]).to_csv(root / "public" / "test.csv", index=False)
    test[["user", "click"]].assign(click=0.5).to_csv(root / "public" / "sample_submission.csv", index=False)
    test[["user", "click"]].to_csv(root / "private" / "answers.csv", index=False)
    (root / "description.md").write_text("clicks\n")
    (root / "task.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "rank",
                "task_type": "ranking",
                "metric": "gauc",
                "id_column": "user",
                "ids_unique": False,
                "target_columns": ["click"],
                "submission_columns": ["user", "click"],
            }
        )
    )
    run = create_run(load_task(root), load_config(), tmp_path / "runs")
    ws = run.workspace
    train_users = set(read_csv_exact(ws.data_dir / "train.csv")["user"])
    holdout_users = set(read_csv_exact(ws.holdout_answers)["user"])
    assert holdout_users and not train_users & holdout_users
    assert all(read_csv_exact(ws.holdout_answers)["user"].value_counts() == 8)
    run.close()


def _normalisation_task(root: Path, sample_after) -> Path:
    """A text normalisation: each token's written form ("after") is mostly the token itself
    ("before"); the sample submission's "after" is ``sample_after(test)``."""
    import numpy as np
    import yaml

    rng = np.random.default_rng(0)
    before = rng.choice(["the", "a", ",", "12", "2006", "of"], size=400)
    spoken = {"12": "twelve", "2006": "two thousand six"}
    frame = pd.DataFrame({"id": [f"t{i:04d}" for i in range(400)], "before": before})
    frame["after"] = frame["before"].map(lambda b: spoken.get(b, b))
    train, test = frame.iloc[100:], frame.iloc[:100]
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    train.to_csv(root / "public" / "train.csv", index=False)
    test.drop(columns=["after"]).to_csv(root / "public" / "test.csv", index=False)
    pd.DataFrame({"id": test["id"], "after": sample_after(test)}).to_csv(
        root / "public" / "sample_submission.csv", index=False
    )
    test[["id", "after"]].to_csv(root / "private" / "answers.csv", index=False)
    spec = {"name": "norm", "task_type": "multiclass", "metric": "accuracy", "id_column": "id",
            "target_columns": ["after"], "submission_columns": ["id", "after"]}  # fmt: skip
    (root / "task.yaml").write_text(yaml.safe_dump(spec))
    (root / "description.md").write_text("# norm\nWrite each token as it is spoken.\n")
    return root


def test_a_sample_that_predicts_each_rows_input_as_its_label_is_no_leak(tmp_path):
    """Kaggle's text normalisation samples copy each token ("before") as its prediction; most
    tokens are their own written form, so the sample matches the sealed labels far beyond
    chance, but it repeats a public input row for row: it reveals nothing the inputs do not."""
    task = _normalisation_task(tmp_path / "norm", lambda test: test["before"])
    ws, _ = _build(task, tmp_path)
    report = verify_workspace(ws.run_dir, "id", ["after"])
    assert report.ok, report.problems
    # The control: the same sample with the sealed labels themselves (the spoken forms too) is a leak.
    leaky = _normalisation_task(tmp_path / "leaky", lambda test: test["after"])
    (tmp_path / "second").mkdir()
    ws, _ = _build(leaky, tmp_path / "second")
    report = verify_workspace(ws.run_dir, "id", ["after"])
    assert any("sample_submission.csv" in p and "matches the sealed labels" in p for p in report.problems), report


@pytest.mark.parametrize("name", ["fishing", "flights", "titanic"])  # groups; lookup tables and time; text
def test_a_workspace_built_a_block_at_a_time_is_the_one_built_whole(tmp_path, monkeypatch, name):
    """The train and test files are written a block of rows at a time (so a table of any length
    fits in memory): with blocks of a few rows, every file of the workspace and of the sealed
    folder is byte for byte the one a single block gives."""
    import mlguild.util.exact_csv as exact
    from mlguild.sources.examples import build_example
    from mlguild.util.fs import sha256_file

    task = load_task(build_example(name, tmp_path / name))

    def digests(run_dir: Path) -> dict[str, str]:
        ws = build_workspace(task, run_dir, FirewallConfig())
        files = [*ws.data_dir.rglob("*"), *ws.sealed_dir.iterdir()]
        return {p.relative_to(run_dir).as_posix(): sha256_file(p) for p in files if p.is_file()}

    whole = digests(tmp_path / "whole")
    monkeypatch.setattr(exact, "_BLOCK_BYTES", 512)
    monkeypatch.setattr(exact, "_PANDAS_BLOCK_ROWS", 7)
    assert digests(tmp_path / "blocks") == whole
    assert verify_workspace(tmp_path / "blocks", task.spec.id_column, task.spec.target_columns).ok


def test_a_copy_of_the_target_is_found_past_the_rows_compared_first(tmp_path):
    """Every column is compared with the target on the first 2,000 rows and only those that agree
    there are read whole: a column that agrees there and not after is no copy; a copy is."""
    from mlguild.config import load_config
    from mlguild.rundir.folder import create_run

    root = make_task(tmp_path / "t", n=6_000)

    def early(frame):  # equal to the target on the first 3,000 rows only
        return frame.assign(y_early=frame["y"].where(frame.index < 3_000, "2"))

    _edit_train(root, early)
    run = create_run(load_task(root), load_config(), tmp_path / "runs")
    run.close()
    _edit_train(root, lambda f: f.assign(y_copy=f["y"]))
    with pytest.raises(TaskError, match="'y_copy' equals the target 'y'"):
        create_run(load_task(root), load_config(), tmp_path / "runs2")


@pytest.mark.parametrize("parquet_above_mb", [64.0, 0.0])
def test_another_format_of_the_train_table_is_never_copied_into_the_workspace(tmp_path, parquet_above_mb):
    # Competitions often ship train.parquet beside train.csv: every labelled row, the holdout's too.
    task_dir = make_task(tmp_path / "t", n=200)
    pd.read_csv(task_dir / "public" / "train.csv").to_parquet(task_dir / "public" / "train.parquet")
    (task_dir / "public" / "train.csv.gz").write_bytes(b"")  # any format of it
    ws = build_workspace(load_task(task_dir), tmp_path / "run", FirewallConfig(parquet_above_mb=parquet_above_mb))
    assert sorted(ws.manifest()["other_formats_not_copied"]) == ["train.csv.gz", "train.parquet"]
    assert not (ws.data_dir / "train.csv.gz").exists()
    ids = set(read_csv_exact(ws.data_dir / "train.csv")["id"])
    if parquet_above_mb:
        assert not (ws.data_dir / "train.parquet").exists()
    else:  # the harness's own typed copy: the training rows alone
        assert set(pd.read_parquet(ws.data_dir / "train.parquet")["id"]) == ids
    assert verify_workspace(tmp_path / "run", "id", ["y"]).ok
