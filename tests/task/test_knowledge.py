"""A task's community corpus from a local folder: the cut-off is enforced, notebook outputs,
images, widgets and progress noise are stripped, and the quality signals are kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from conftest import make_task, mlguild, one_line

from mlguild.task.folder import load_task
from mlguild.task.knowledge import list_items

FIXTURES = Path(__file__).parents[1] / "fixtures" / "knowledge"


def test_ingestion_keeps_signals_strips_noise_and_enforces_the_cutoff(tmp_path):
    task = make_task(tmp_path / "t")
    done = mlguild("knowledge", "add", str(FIXTURES), "--task", str(task), "--cutoff", "2021-12-31", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = one_line(done.stdout)
    assert "added 3 item(s)" in out and "left out (dated 2022-06-01, after the cut-off)" in out
    items = {i.title: i for i in list_items(task)}
    assert set(items) == {"Target encoding of the plan column helped a lot", "Simple LightGBM baseline", "Churn EDA"}
    post = items["Target encoding of the plan column helped a lot"]
    assert (post.author_tier, post.votes, post.public_score, post.date) == ("expert", 41, 0.8412, "2021-03-02")
    assert "five folds" in post.text and "example.invalid" not in post.text and "base64" not in post.text
    assert "widget" not in post.text
    notebook = items["Churn EDA"]
    assert (notebook.kind, notebook.author_tier, notebook.votes) == ("notebook", "master", 77)
    assert "```python\nimport pandas as pd" in notebook.text and "df.churn.mean()" in notebook.text
    for noise in ("100%|", "iVBOR", "0.2653", "!pip", "attachment:", "widget-view"):
        assert noise not in notebook.text, noise
    script = items["Simple LightGBM baseline"]
    assert script.kind == "script" and "LGBMClassifier" in script.text and "author_tier" not in script.text

    again = mlguild("knowledge", "add", str(FIXTURES), "--task", str(task), "--cutoff", "2021-12-31", cwd=tmp_path)
    assert "added 0 item(s)" in one_line(again.stdout) and "3 already there" in one_line(again.stdout)
    listed = mlguild("knowledge", "list", "--task", str(task), cwd=tmp_path)
    assert listed.returncode == 0 and "Churn EDA" in listed.stdout
    shown = mlguild("knowledge", "show", post.id, "--task", str(task), cwd=tmp_path)
    assert "five folds" in shown.stdout and "41 votes" in shown.stdout


def test_the_deadline_is_the_default_cutoff_and_knowledge_is_not_data(tmp_path):
    made = make_task(tmp_path / "made")
    task = tmp_path / "flat"  # a Kaggle download's layout: the data beside task.yaml
    shutil.copytree(made / "public", task)
    spec = {**yaml.safe_load((made / "task.yaml").read_text()), "data_dir": ".", "answers_file": None}
    (task / "task.yaml").write_text(yaml.safe_dump(spec))
    (task / "description.md").write_text("A task.\n")
    (task / "competition.json").write_text(json.dumps({"deadline": "2021-02-15T23:59:00"}))
    done = mlguild("knowledge", "add", str(FIXTURES), "--task", str(task), cwd=tmp_path)
    assert "cut-off 2021-02-15" in done.stdout
    assert {i.title for i in list_items(task)} == {"Simple LightGBM baseline", "Churn EDA"}
    public = [p.relative_to(task).as_posix() for p in load_task(task).public_files()]
    assert public and not [p for p in public if p.startswith("knowledge/")]  # never shown to scripts


def test_an_item_without_a_date_is_refused(tmp_path):
    task = make_task(tmp_path / "t")
    undated = tmp_path / "undated.md"
    undated.write_text("---\ntitle: no date\n---\ntext\n")
    done = mlguild("knowledge", "add", str(undated), "--task", str(task), cwd=tmp_path)
    assert done.returncode == 2 and "has no date" in one_line(done.stderr)
