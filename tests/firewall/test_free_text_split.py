"""A free-text target (an extracted phrase, scored by the word-level Jaccard score) is sealed by
a plain seeded draw: stratified by label, the holdout would hold only the phrases that repeat
and never a row whose phrase is unique (a neutral tweet's whole text)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from mlguild.config import FirewallConfig
from mlguild.firewall.workspace import build_workspace
from mlguild.task.folder import load_task


def test_a_free_text_holdout_is_drawn_at_random_not_by_label(tmp_path: Path) -> None:
    root = tmp_path / "tweets"
    (root / "public").mkdir(parents=True)
    texts = [f"text number {i} about the weather" for i in range(400)]
    # half the rows share a few short phrases, half have their own whole text as their phrase
    phrases = [("so good" if i % 4 == 0 else "so bad") if i % 2 == 0 else texts[i] for i in range(400)]
    frame = pd.DataFrame({"textID": [f"t{i:04d}" for i in range(400)], "text": texts, "selected_text": phrases})
    frame.iloc[:300].to_csv(root / "public" / "train.csv", index=False)
    frame.iloc[300:, :2].to_csv(root / "public" / "test.csv", index=False)
    frame.iloc[300:].assign(selected_text="").drop(columns="text").to_csv(
        root / "public" / "sample_submission.csv", index=False
    )
    task = {
        "name": "tweets", "task_type": "multiclass", "metric": "jaccard_words", "id_column": "textID",
        "target_columns": ["selected_text"], "submission_columns": ["textID", "selected_text"], "answers_file": None,
    }  # fmt: skip
    (root / "task.yaml").write_text(yaml.safe_dump(task))
    (root / "description.md").write_text("# Tweets\nThe phrase of each tweet that carries its sentiment.\n")
    (tmp_path / "run").mkdir()
    ws = build_workspace(load_task(root), tmp_path / "run", FirewallConfig())
    sealed = pd.read_csv(ws.holdout_answers, dtype=str, keep_default_na=False)
    unique = sealed["selected_text"].str.startswith("text number").mean()
    assert 0.3 < unique < 0.7  # about half, as in the labelled rows (stratified: none at all)
    assert not ws.manifest()["split"]["stratified"]
