"""Images, text and sound as competitors use them, end to end with the recipe brain: the
bundled colour photos example drafts the pretrained backbone (its embeddings cached for the
next node and the final refit), the bundled reviews example adds sentence embeddings beside
TF-IDF, and a folder of wav files becomes an audio task whose profile carries the sample rate
and length. The examples run on a seeded slice of their rows (a third of the photos, 750 of the
5,000 reviews): the same data, at a cost a test suite on two cores can pay."""

from __future__ import annotations

import json
import wave

import numpy as np
import pandas as pd
import pytest
from conftest import mlguild, one_line, slice_task

from mlguild.memory.embed import model_path
from mlguild.sandbox.backbones import find_backbones
from mlguild.sources.examples import build_example
from mlguild.task.profile import DataProfile, summary_text

pytestmark = pytest.mark.slow
# Two drafts; a script may take long on a machine whose cores other work shares (a backbone
# on a few hundred images, an encoder on thousands of texts), so its limit is generous.
RUN = ("run", "--brain", "recipes", "-n", "2", "--set", "sandbox.script_timeout_s=1200")


def journal(run):
    return [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]


def drafted(run) -> list[str]:
    return [r["node"]["meta"].get("recipe") for r in journal(run) if r["type"] == "node_started"]


def later_nodes_using(run, marker: str, first: str) -> list[str]:
    """The nodes after ``first`` (later drafts, the final stage's refits) whose script has ``marker``."""
    nodes = sorted(p.name for p in (run / "nodes").iterdir() if p.name > first)
    return [n for n in nodes if marker in (run / "nodes" / n / "solution.py").read_text()]


@pytest.mark.skipif("efficientnet_lite0" not in find_backbones(), reason="needs the [vision] extra")
@pytest.mark.timeout(1800)
def test_the_photos_example_uses_the_pretrained_backbone_on_cpu(tmp_path):
    pytest.importorskip("skimage", reason="needs the [examples] extra")
    photos = slice_task(build_example("photos", tmp_path / "example"), tmp_path / "photos", 126, 36)
    done = mlguild(*RUN, str(photos), "--run-id", "p", cwd=tmp_path, timeout=1500)
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "p"
    profile = json.loads((run / "profile.json").read_text())
    assert profile["files"]["colour"] and profile["files"]["kind"] == "image"
    assert drafted(run)[:2] == ["backbone_linear", "backbone_lightgbm"]
    first, second = (run / "nodes" / n / "stdout.txt" for n in ("n0001", "n0002"))
    assert "embedded at 224 px on cpu" in first.read_text()
    assert "embeddings read from the run's cache" in second.read_text()  # the backbone ran once
    for node in later_nodes_using(run, "efficientnet_lite", "n0001"):  # the final refit's images too
        assert "embeddings read from the run's cache" in (run / "nodes" / node / "stdout.txt").read_text(), node
    grade = json.loads((run / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and grade["test_score"] > 0.5  # nine classes: guessing scores 0.11
    for node in ("n0001", "n0002"):  # a CPU run: no CUDA probe, no warning storm
        stderr = (run / "nodes" / node / "stderr.txt").read_text()
        assert "CUDA" not in stderr and "Warning" not in stderr, stderr[-2000:]
    status = mlguild("status", str(run), cwd=tmp_path)
    assert "device: every node's script ran on the cpu" in one_line(status.stdout)


@pytest.mark.skipif(model_path() is None, reason="needs the [embeddings] extra")
@pytest.mark.timeout(1800)
def test_the_reviews_example_adds_sentence_embeddings(tmp_path):
    reviews = slice_task(build_example("reviews", tmp_path / "example"), tmp_path / "reviews", 300, 100)
    done = mlguild(*RUN, str(reviews), "--run-id", "t", cwd=tmp_path, timeout=1500)
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "t"
    floor = journal(run)[0]["floor_score"]  # the whole run, to a final graded above the constant
    grade = json.loads((run / "audit" / "final_grade.json").read_text())
    assert grade["valid"] and grade["test_score"] > floor, (grade, floor)
    assert drafted(run)[:2] == ["tfidf_linear", "tfidf_sentences"]
    finished = {r["id"]: r for r in journal(run) if r["type"] == "node_finished"}
    assert finished["n0002"]["status"] == "scored" and finished["n0002"]["score"] > 0.6
    assert "SentenceTransformer" in (run / "nodes" / "n0002" / "solution.py").read_text()
    assert "distinct texts embedded on cpu" in (run / "nodes" / "n0002" / "stdout.txt").read_text()
    for node in later_nodes_using(run, "SentenceTransformer", "n0002"):  # a refit of it reads them
        assert "embeddings read from the run's cache" in (run / "nodes" / node / "stdout.txt").read_text(), node


def tone(path, rate: int, seconds: float, hz: float, rng) -> None:
    t = np.arange(int(rate * seconds)) / rate
    signal = 0.4 * np.sin(2 * np.pi * hz * t) + 0.2 * np.sin(2 * np.pi * 2 * hz * t) + 0.15 * rng.normal(size=t.size)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((np.clip(signal, -1, 1) * 32767).astype("<i2").tobytes())


def wav_task(root, n_train: int = 48, n_test: int = 16):
    """Low hums against high whistles with noise, 0.4 to 1.2 s long at 8 kHz, as a Kaggle-like folder."""
    rng = np.random.default_rng(0)
    for folder in ("train", "test"):
        (root / folder).mkdir(parents=True)
    rows = []
    for k in range(n_train + n_test):
        label = "high" if k % 2 else "low"
        hz = rng.uniform(900, 1400) if label == "high" else rng.uniform(120, 300)
        folder = "train" if k < n_train else "test"
        tone(root / folder / f"clip{k:03d}.wav", 8000, rng.uniform(0.4, 1.2), hz, rng)
        rows.append({"clip": f"clip{k:03d}", "label": label, "folder": folder})
    frame = pd.DataFrame(rows)
    frame[frame.folder == "train"][["clip", "label"]].to_csv(root / "train.csv", index=False)
    test = frame[frame.folder == "test"]
    test[["clip"]].to_csv(root / "test.csv", index=False)
    test.assign(label="low")[["clip", "label"]].to_csv(root / "sample_submission.csv", index=False)
    (root / "description.md").write_text("# Tones\nTell each clip's sound.\n## Evaluation\nAccuracy.\n")
    return root


@pytest.mark.timeout(900)
def test_a_folder_of_wav_files_runs_as_an_audio_task(tmp_path):
    task = wav_task(tmp_path / "tones")
    done = mlguild("run", str(task), "--brain", "recipes", "-n", "1", "--run-id", "a", cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(audio_files)" in one_line(done.stdout)
    run = tmp_path / "runs" / "a"
    files = json.loads((run / "profile.json").read_text())["files"]
    assert files["kind"] == "audio" and files["sample_rate"] == 8000 and 0.4 <= files["seconds"]["mean"] <= 1.2
    profile = DataProfile.from_dict(json.loads((run / "profile.json").read_text()))
    assert "wav sound, sample rate 8000 Hz" in summary_text(profile)  # what an LLM's prompt shows
    assert drafted(run)[0] == "audio_lightgbm"
    (finished,) = [r for r in journal(run) if r["type"] == "node_finished" and r["id"] == "n0001"]
    assert finished["status"] == "scored" and finished["score"] > 0.8  # two tones far apart in pitch
    assert "spectral features at 8000 Hz" in (run / "nodes" / "n0001" / "stdout.txt").read_text()
