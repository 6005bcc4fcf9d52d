"""Every count a prompt states is a CSV reader's: text fields with line breaks in them (tweets,
reviews) are one row each, not one per line, and the brief's prompt says which figure is the
files' when the description counts otherwise."""

from __future__ import annotations

import pandas as pd
import yaml

from mlguild.config import load_config
from mlguild.llm import ScriptedLLM
from mlguild.rundir.folder import create_run
from mlguild.task.brief import ensure_brief
from mlguild.task.folder import load_task

BRIEF_REPLY = "## Rules\n- r\n## Metric\n- m\n## Data notes\n- d\n## Promising directions\n1. tfidf\n" + "x" * 200


def _text_task(root, n=120):
    texts = [f"tweet {i}\nwith a second line\nand a third" if i % 2 else f"tweet {i}" for i in range(n)]
    frame = pd.DataFrame({"id": [f"t{i:04d}" for i in range(n)], "text": texts, "y": [i % 2 for i in range(n)]})
    train, test = frame.iloc[30:], frame.iloc[:30]
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    train.to_csv(root / "public" / "train.csv", index=False)
    test.drop(columns=["y"]).to_csv(root / "public" / "test.csv", index=False)
    pd.DataFrame({"id": test["id"], "y": 0}).to_csv(root / "public" / "sample_submission.csv", index=False)
    test[["id", "y"]].to_csv(root / "private" / "answers.csv", index=False)
    spec = {
        "name": "tweets",
        "task_type": "binary",
        "metric": "accuracy",
        "id_column": "id",
        "target_columns": ["y"],
        "submission_columns": ["id", "y"],
        "text_columns": ["text"],
    }
    (root / "task.yaml").write_text(yaml.safe_dump(spec))
    # The description counts lines, as the competition page did: 3 lines per odd row.
    (root / "description.md").write_text("# Tweets\nThe train file has 270 rows and the test file 60.\n")
    return root


def test_rows_with_line_breaks_in_text_fields_are_counted_as_a_csv_reader_counts_them(tmp_path):
    run = create_run(load_task(_text_task(tmp_path / "t")), load_config(None, []), tmp_path / "runs")
    data = run.path / "workspace" / "data"
    holdout, test = pd.read_csv(data / "holdout.csv"), pd.read_csv(data / "test.csv")
    train = pd.read_csv(data / "train.csv")
    assert (run.profile.n_train, run.profile.n_holdout, run.profile.n_test) == (len(train), len(holdout), len(test))
    assert run.profile.n_test == 30 and run.profile.n_train + run.profile.n_holdout == 90
    lines = (data / "test.csv").read_text().count("\n") - 1
    assert lines > 30  # counting lines would have said more

    llm = ScriptedLLM([BRIEF_REPLY])
    ensure_brief(run.path, run.spec, run.profile, run.description, llm)
    prompt = llm.calls[0]["messages"][-1].content
    assert "270 rows" in prompt  # the description's own figure is shown as it is ...
    assert f"the test file has {run.profile.n_test} rows" in prompt  # ... beside the files' counts,
    assert "as a CSV reader reads them" in prompt and "these counts are the files'" in prompt  # ... and which is which
    assert f"{lines} rows" not in prompt
