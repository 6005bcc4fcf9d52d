"""Before the first draft that runs a pretrained encoder, its throughput is measured on a
small sample (mlguild.run.encoder_probe), once per run, and a draft the measured rate says
cannot finish is not started. The measurement is injected: nothing here depends on how fast
this machine encodes."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml
from conftest import GOOD, make_task, scripted_agent

from mlguild.core.protocols import Action
from mlguild.core.vocabulary import FailureKind, Op
from mlguild.run.encoder_probe import PROBE_ROWS, PROBES, Throughput, encoder_of
from mlguild.rundir.journal import read_journal
from mlguild.sandbox.backbones import IMAGE, TEXT

# A script that would load the sentence encoder: its import names the encoder to the probe
# (never run here: the test's scripts stay fast).
SENTENCES = "if False:\n    from sentence_transformers import SentenceTransformer  # noqa: F401\n" + GOOD


def _text_task(root, n=200):
    """make_task's task with a free-text column."""
    make_task(root, n=n)
    for name in ("train.csv", "test.csv"):
        frame = pd.read_csv(root / "public" / name)
        frame["review"] = [f"review number {i}, {'good' if i % 3 else 'bad'} taste" for i in range(len(frame))]
        frame.to_csv(root / "public" / name, index=False)
    spec = yaml.safe_load((root / "task.yaml").read_text())
    (root / "task.yaml").write_text(yaml.safe_dump({**spec, "text_columns": ["review"]}))
    return root


class _Measured:
    """A probe's measurement as if made: ``rate`` rows a second after ``load_s`` to load."""

    def __init__(self, rate: float, load_s: float = 4.0):
        self.rate, self.load_s, self.calls = rate, load_s, []

    def __call__(self, backbone, weights, sample, limit_s):
        self.calls.append((backbone, list(sample)))
        return Throughput(backbone, self.load_s, self.rate, len(sample))


def test_a_text_draft_the_measured_throughput_says_cannot_finish_is_not_started(tmp_path):
    agent, run = scripted_agent(_text_task(tmp_path / "task"), tmp_path, [SENTENCES, SENTENCES, GOOD])
    session = agent.session
    measured = _Measured(rate=5.0)  # 5 texts a second: 200 rows take 40 s, and 4 s to load
    session.probe.measure = measured
    slow = agent.step(Action(Op.DRAFT, ()), 20)
    assert slow.status == FailureKind.OVER_BUDGET
    assert not (run.node_dir(slow.id) / "stdout.txt").exists()  # its script never ran
    assert "5.0 rows/s" in (slow.failure or "") and "exceeds the 20 s" in (slow.failure or "")
    finished = [r for r in read_journal(run.path / "journal.jsonl") if r["type"] == "node_finished"]
    assert finished[-1]["id"] == slow.id and finished[-1]["timing"]["estimate_s"] == pytest.approx(4.0 + 200 / 5.0)
    # The probe read a few dozen of the task's own texts, and ran once: the run keeps its result.
    assert len(measured.calls) == 1 and measured.calls[0][0] == TEXT
    assert 0 < len(measured.calls[0][1]) <= PROBE_ROWS and all("taste" in t for t in measured.calls[0][1])
    assert json.loads((run.path / PROBES).read_text())[TEXT]["rows_per_s"] == 5.0
    again = agent.step(Action(Op.DRAFT, ()), 20)
    assert again.status == FailureKind.OVER_BUDGET and len(measured.calls) == 1
    plain = agent.step(Action(Op.DRAFT, ()), 20)  # no encoder: no probe, started
    assert plain.ok and len(measured.calls) == 1


def test_a_text_draft_that_fits_starts_and_a_cached_encoder_is_not_probed(tmp_path):
    agent, run = scripted_agent(_text_task(tmp_path / "task"), tmp_path, [SENTENCES, SENTENCES])
    measured = _Measured(rate=1000.0)  # fast: 200 rows in a fraction of a second
    agent.session.probe.measure = measured
    assert agent.step(Action(Op.DRAFT, ()), 20).ok
    assert len(measured.calls) == 1
    (run.path / PROBES).unlink()
    cache = run.path / "embeddings"
    cache.mkdir(exist_ok=True)
    (cache / "sentences-0123456789abcdef01234567.npy").write_bytes(b"")  # an earlier node's embeddings
    assert agent.session.probe.estimate({}, SENTENCES, 20) is None and len(measured.calls) == 1


def test_which_encoder_a_script_runs():
    assert encoder_of({"brain": "recipes", "recipe": "tfidf_sentences"}, "") == TEXT
    assert encoder_of({"brain": "recipes", "recipe": "backbone_linear"}, "") == IMAGE
    assert (
        encoder_of({"brain": "recipes", "recipe": "backbone_finetune"}, "") is None
    )  # the GPU's: trained, not encoded
    assert encoder_of({"brain": "recipes", "recipe": "tfidf_linear"}, "") is None
    assert encoder_of({}, "import numpy as np\nfrom efficientnet_lite_pytorch import EfficientNet\n") == IMAGE
    assert encoder_of({}, "import lightgbm\n") is None
    # A probe that ran out of time says only that loading takes at least that long.
    assert Throughput(TEXT, 20.0, math.inf, 0).seconds(10_000) == 20.0
