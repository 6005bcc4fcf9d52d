"""What a draft that runs a pretrained encoder will cost, before its first script starts.

A draft with sentence embeddings (all-MiniLM-L6-v2) or image embeddings (EfficientNet-Lite0)
spends most of its time in the encoder, and nothing on this run has measured a script like
it before the first one runs (mlguild.run.cost estimates from measured scripts only): on 2
cores a sentence draft once took 101 s of a 5-minute run and scored nothing. So, before
such a draft, the harness measures the encoder itself on a small sample of the task's own
inputs (``PROBE_ROWS`` texts or images, never labels): how long it takes to load, and how
many rows a second it encodes once loaded (``Throughput``). The draft's estimate is the
load plus every row it would embed (train, holdout and test, each text column) at that
rate, a lower bound of its cost; a draft whose estimate exceeds its time limit is not
started (mlguild.run.gate), journaled with the estimate.

The probe runs once per encoder per run: its result is kept in the run folder
(``probes.json``), so a resume does not pay it again. It is not run when the run's
embeddings cache already holds that encoder's embeddings (a later draft reads them), nor
for a script that loads no encoder.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..brains.recipes.catalog import RECIPES
from ..rundir.folder import RunDir
from ..sandbox.backbones import IMAGE, TEXT, find_backbones, script_env
from ..util.fs import atomic_write, read_text_no_follow
from .cost import Estimate
from .embeddings_cache import EMBEDDINGS

PROBE_ROWS = 32  # a few dozen rows: enough for a rate, little enough to cost seconds
PROBE_LIMIT_S = 60.0  # the longest a probe runs (a draft with less time gives it no more than its own)
PROBES = "probes.json"
# The prefix of the files the recipes' scripts write to the run's embeddings cache, per encoder.
_CACHED_AS = {TEXT: "sentences-", IMAGE: "images-"}
_IMPORTS = {TEXT: "sentence_transformers", IMAGE: "efficientnet_lite_pytorch"}


@dataclass(frozen=True)
class Throughput:
    """An encoder as the probe measured it: ``load_s`` to load, ``rows_per_s`` once loaded,
    on ``rows`` rows (0: it did not finish the sample within the probe's limit)."""

    backbone: str
    load_s: float
    rows_per_s: float
    rows: int

    def seconds(self, rows: int) -> float:
        """The time to load the encoder and encode ``rows`` rows."""
        return self.load_s + rows / max(self.rows_per_s, 1e-9)


# Measures an encoder (a backbone name, its weights' path) on sample inputs (texts, or image
# paths) within a limit in seconds; None when it cannot run here.
Measure = Callable[[str, Path, list[str], float], "Throughput | None"]


def encoder_of(meta: Mapping[str, Any], code: str) -> str | None:
    """The pretrained encoder a proposal's script runs: its recipe's backbone, else the
    encoder library its code imports; None for a script that runs none."""
    recipe = RECIPES.get(str(meta.get("recipe") or "")) if meta.get("brain") == "recipes" else None
    if recipe is not None:
        return recipe.backbone if recipe.backbone in _IMPORTS and not recipe.gpu else None
    return next(
        (name for name, module in _IMPORTS.items() if f"import {module}" in code or f"from {module} " in code), None
    )


class EncoderProbe:
    """The run's encoder throughputs (measured once each, kept in ``probes.json``) and the
    estimates of the drafts that would run an encoder."""

    def __init__(self, run: RunDir, measure: Measure | None = None):
        self.run = run
        self.measure: Measure = measure or measure_in_subprocess
        self._path = run.path / PROBES
        self._lock = threading.Lock()  # two workers' drafts: one probe

    def estimate(self, meta: Mapping[str, Any], code: str, timeout: float) -> Estimate | None:
        """The estimate of a script that runs an encoder whose embeddings the run has not
        cached yet, to be started with ``timeout`` seconds (the probe needs no longer than it
        has); None for any other script, or when the encoder cannot be measured here."""
        backbone = encoder_of(meta, code)
        if backbone is None or self._cached(backbone):
            return None
        found = self.throughput(backbone, min(PROBE_LIMIT_S, timeout))
        if found is None:
            return None
        rows = self._rows_to_embed(backbone)
        if found.rows:
            basis = f"{found.rows_per_s:.1f} rows/s on {found.rows} rows and {found.load_s:.0f} s to load"
        else:
            basis = f"not loaded and through {PROBE_ROWS} rows in {found.load_s:.0f} s"
        basis = f"{backbone}: {basis}, measured on this run; {rows} rows to embed"
        return Estimate(found.seconds(rows), basis)

    def throughput(self, backbone: str, limit_s: float = PROBE_LIMIT_S) -> Throughput | None:
        """``backbone``'s throughput: as kept in the run folder, else measured now (within
        ``limit_s``) and kept."""
        with self._lock:
            kept = self._kept()
            if backbone in kept:
                return Throughput(**kept[backbone])
            weights = find_backbones().get(backbone)
            sample = self._sample(backbone)
            found = self.measure(backbone, weights.path, sample, limit_s) if weights is not None and sample else None
            if found is not None:
                kept[backbone] = asdict(found)
                atomic_write(self._path, json.dumps(kept, indent=2))
            return found

    def _kept(self) -> dict[str, dict[str, Any]]:
        try:
            return {str(k): dict(v) for k, v in json.loads(read_text_no_follow(self._path) or "{}").items()}
        except (ValueError, TypeError, AttributeError):
            return {}

    def _cached(self, backbone: str) -> bool:
        cache = self.run.path / EMBEDDINGS
        return cache.is_dir() and any(cache.glob(f"{_CACHED_AS[backbone]}*.npy"))

    def _sample(self, backbone: str) -> list[str]:
        """``PROBE_ROWS`` of the training inputs the encoder would read: texts, or image paths."""
        spec, data = self.run.spec, self.run.workspace.data_dir
        if backbone == TEXT:
            columns = [c for c in spec.text_columns]
            if not columns:
                return []
            frame = pd.read_csv(data / spec.train_file, usecols=columns, dtype=str, nrows=20 * PROBE_ROWS)
            texts = frame[columns[0]].dropna().astype(str)
            return texts.sample(min(PROBE_ROWS, len(texts)), random_state=0).tolist()
        if spec.file_column is None or spec.train_files is None:
            return []
        frame = pd.read_csv(data / spec.train_file, usecols=[spec.file_column], dtype=str, nrows=PROBE_ROWS)
        folder = data / str(spec.train_files)
        return [str(folder / (name + spec.file_suffix)) for name in frame[spec.file_column].dropna()]

    def _rows_to_embed(self, backbone: str) -> int:
        """Every row a draft embeds: train, holdout and test, once per text column for text."""
        profile = self.run.profile
        rows = profile.n_train + profile.n_holdout + profile.n_test
        return rows * max(1, len(self.run.spec.text_columns)) if backbone == TEXT else rows


# Loads the encoder, encodes the sample once, and prints the two times as JSON. Run in a
# child process: torch stays out of the harness, and a limit can stop it.
_PROBE = r"""
import json, sys, time
job = json.load(sys.stdin)
start = time.perf_counter()
if job["backbone"] == "text":
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(job["path"], device="cpu")
    model.max_seq_length = min(model.max_seq_length, 128)
    loaded = time.perf_counter()
    model.encode(job["items"][:4], show_progress_bar=False)  # the first call's warm-up, not the rate
    warm = time.perf_counter()
    model.encode(job["items"], batch_size=64, show_progress_bar=False)
else:
    import numpy as np, torch
    from efficientnet_lite_pytorch import EfficientNet
    from PIL import Image
    model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=job["path"]).eval()
    loaded = warm = time.perf_counter()
    def pixels(path):
        with Image.open(path) as image:
            return ((np.asarray(image.convert("RGB").resize((224, 224)), dtype=np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)
    with torch.no_grad():
        model.extract_features(torch.from_numpy(np.stack([pixels(p) for p in job["items"]])))
print(json.dumps({"load_s": warm - start, "encode_s": time.perf_counter() - warm}))
"""


def measure_in_subprocess(backbone: str, weights: Path, sample: list[str], limit_s: float) -> Throughput | None:
    """Measure ``backbone`` (its weights at ``weights``) on ``sample`` in a child process of
    this Python, offline, within ``limit_s``; None when it fails (the draft then runs and fails
    on its own). One that runs out of time says only that loading takes at least that long."""
    job = json.dumps({"backbone": "text" if backbone == TEXT else "image", "path": str(weights), "items": sample})
    env = {**os.environ, **script_env()}
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE], input=job, capture_output=True, text=True, timeout=limit_s, env=env
        )
    except subprocess.TimeoutExpired:  # a lower bound: the draft needs at least this long
        return Throughput(backbone, round(time.monotonic() - started, 3), math.inf, 0)
    try:
        times = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (ValueError, IndexError):
        times = None
    if not isinstance(times, dict):
        return None
    encode_s = max(float(times["encode_s"]), 1e-6)
    return Throughput(backbone, round(float(times["load_s"]), 3), round(len(sample) / encode_s, 3), len(sample))
