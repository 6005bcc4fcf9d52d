"""From a Kaggle URL to a graded submission, through the real `kaggle` client talking to a
local server that speaks the Kaggle API's wire format (tests/kaggle_server.py): the task
folder is downloaded and inferred, a run submits and records the public score beside the
holdout score, the daily limit holds, and every refusal gives a clear message."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import mlguild, one_line
from kaggle_server import FakeCompetition, KaggleServer

pytest.importorskip("kaggle", reason="needs the [kaggle] extra")

SLUG = "titanic-lite"


def _accuracy(answers: pd.DataFrame):
    def score(content: bytes) -> float:
        sub = pd.read_csv(io.BytesIO(content), dtype=str)
        merged = answers.merge(sub, on="id", suffixes=("", "_pred"))
        return float((merged["survived"] == merged["survived_pred"]).mean())

    return score


@pytest.fixture
def kaggle(example_tasks, tmp_path):
    example = example_tasks["titanic"]
    answers = pd.read_csv(example / "private" / "answers.csv", dtype=str)
    files = {
        name: (example / "public" / name).read_bytes() for name in ("train.csv", "test.csv", "sample_submission.csv")
    }
    with KaggleServer() as server:
        server.add(
            FakeCompetition(
                SLUG,
                "Titanic, lite",
                evaluation_metric="Categorization Accuracy",
                description="Predict who survived the sinking of the Titanic.",
                files=files,
                public_score=_accuracy(answers),
                pending_polls=1,
            )
        )
        server.add(FakeCompetition("closed-rules", "Rules first", files=files, rules_accepted=False))
        config = tmp_path / "kaggle-config"
        config.mkdir()
        env = {
            "MLGUILD_KAGGLE_ENDPOINT": server.url,
            "KAGGLE_USERNAME": "tester",
            "KAGGLE_KEY": "secret-key",
            "KAGGLE_CONFIG_DIR": str(config),
            "KAGGLE_API_TOKEN": "",
            "HOME": str(tmp_path / "home"),
        }
        yield server, env, answers


def _journal(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]


def test_url_to_task_folder_to_run_to_submission_with_its_public_score(kaggle, tmp_path):
    server, env, answers = kaggle
    made = mlguild("init", f"https://www.kaggle.com/competitions/{SLUG}", "--out", "task", cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stdout + made.stderr
    task = tmp_path / "task"
    spec = __import__("yaml").safe_load((task / "task.yaml").read_text())
    assert (spec["metric"], spec["source"], spec["data_dir"]) == ("accuracy", f"kaggle:{SLUG}", ".")
    assert (task / "train.csv").read_bytes() == server.competitions[SLUG].files["train.csv"]
    meta = json.loads((task / "competition.json").read_text())
    assert meta["title"] == "Titanic, lite" and meta["evaluation_metric"] == "Categorization Accuracy"
    assert "Categorization Accuracy" in (task / "description.md").read_text()

    args = ["run", "task", "--brain", "recipes", "-n", "3", "--run-id", "r", "--submit", "best"]
    ran = mlguild(*args, "--set", "kaggle.poll_s=60", cwd=tmp_path, env=env, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    journal = _journal(tmp_path / "runs" / "r")
    (submitted,) = [r for r in journal if r["type"] == "kaggle_submitted"]
    (scored,) = [r for r in journal if r["type"] == "kaggle_scored"]
    final = (tmp_path / "runs" / "r" / "final" / "submission.csv").read_bytes()
    assert server.submissions[SLUG][0]["content"] == final  # the final submission, as the run chose it
    assert scored["node"] == submitted["node"]
    assert scored["public_score"] == pytest.approx(_accuracy(answers)(final), abs=1e-5)  # Kaggle rounds to 5
    assert "public leaderboard accuracy" in ran.stdout
    status = mlguild("status", "runs/r", cwd=tmp_path, env=env)
    assert "public LB" in status.stdout


def test_each_new_best_is_submitted_within_the_daily_limit(kaggle, tmp_path):
    server, env, _answers = kaggle
    assert mlguild("init", f"kaggle:{SLUG}", "--out", "task", cwd=tmp_path, env=env).returncode == 0
    args = ["run", "task", "--brain", "recipes", "-n", "6", "--run-id", "r", "--submit", "each"]
    ran = mlguild(*args, "--set", "kaggle.daily_limit=1", "--set", "kaggle.poll_s=0", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    journal = _journal(tmp_path / "runs" / "r")
    assert len([r for r in journal if r["type"] == "kaggle_submitted"]) == 1 == len(server.submissions[SLUG])
    bests = [r for r in journal if r["type"] == "best_changed"]
    if len(bests) > 1:  # every later best was held back by the limit, and said so
        assert [r for r in journal if r["type"] == "kaggle_submit_skipped"]
        assert "daily_limit" in ran.stdout


def test_a_rate_limited_submission_is_a_warning_not_the_end_of_the_run(kaggle, tmp_path):
    server, env, _answers = kaggle
    assert mlguild("init", SLUG, "--out", "task", cwd=tmp_path, env=env).returncode == 0  # a bare name
    server.rate_limit_submits = 5
    ran = mlguild(
        "run", "task", "--brain", "recipes", "-n", "2", "--run-id", "r", "--submit", "best", cwd=tmp_path, env=env
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "rate-limiting" in one_line(ran.stdout)
    assert [r for r in _journal(tmp_path / "runs" / "r") if r["type"] == "kaggle_submit_failed"]


@pytest.mark.parametrize(
    ("case", "said", "fix"),
    [
        ("bad key", "refused the credentials", "kaggle.com/settings"),
        ("unknown", "has no competition 'no-such-comp'", "check the name"),
        ("rules", "not accepted the rules of 'closed-rules'", "closed-rules/rules"),
        ("no credentials", "no Kaggle credentials found", "kaggle.json"),
    ],
)
def test_refusals_are_clear(kaggle, tmp_path, case, said, fix):
    _server, env, _answers = kaggle
    slug = {"unknown": "no-such-comp", "rules": "closed-rules"}.get(case, SLUG)
    if case == "bad key":
        env = {**env, "KAGGLE_KEY": "wrong"}
    if case == "no credentials":
        env = {**env, "KAGGLE_USERNAME": "", "KAGGLE_KEY": ""}
    done = mlguild("init", f"https://www.kaggle.com/competitions/{slug}", "--out", "task", cwd=tmp_path, env=env)
    err = one_line(done.stderr)
    assert done.returncode == 2 and said in err and fix in err, done.stdout + done.stderr
    assert not (tmp_path / "task").exists()  # nothing half-made


def test_submit_needs_a_kaggle_task(small_task, tmp_path):
    done = mlguild("run", str(small_task), "--submit", "best", "-n", "1", cwd=tmp_path)
    assert done.returncode == 2 and "--submit needs a task made from a Kaggle competition" in one_line(done.stderr)
