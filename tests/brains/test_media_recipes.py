"""The image, text and sound recipes render into scripts that compile, the GPU-only fine-tuning
included (it cannot run without a GPU: tests/gpu runs it), and the draft order follows what the
image files look like."""

from __future__ import annotations

import pytest

from mlguild.brains.recipes.catalog import PHOTO_ORDER, RECIPES, photo_like, recipes_for
from mlguild.brains.recipes.draft import draft_meta
from mlguild.brains.recipes.render import render_script
from mlguild.task.folder import TaskSpec

FILES = dict(file_column="image", train_files="train", test_files="test", file_suffix=".jpg")


def task(modality: str, task_type: str = "multiclass", metric: str = "accuracy") -> dict:
    spec = TaskSpec(
        name="t",
        task_type=task_type,
        modality=modality,
        metric=metric,
        id_column="id",
        target_columns=["label"],
        submission_columns=["id", "label"],
        **(FILES if modality != "text" else {"text_columns": ["review"]}),
    )
    return spec.public_dict()


PROFILE = {"n_train": 100, "columns": [], "target": {"min": 0.0}, "files": {"kind": "image", "colour": True}}


@pytest.mark.parametrize(
    "name,modality",
    [
        ("backbone_linear", "image_files"),
        ("backbone_lightgbm", "image_files"),
        ("backbone_finetune", "image_files"),
        ("audio_lightgbm", "audio_files"),
        ("audio_linear", "audio_files"),
        ("array_lightgbm", "array_files"),
        ("array_linear", "array_files"),
    ],
)
@pytest.mark.parametrize("task_type,metric", [("multiclass", "accuracy"), ("regression", "rmse")])
def test_the_media_recipes_render_scripts_that_compile(name, modality, task_type, metric):
    spec = task(modality, task_type, metric)
    code = render_script(spec, PROFILE, draft_meta(name, spec, PROFILE), "test")
    compile(code, "solution.py", "exec")
    assert "MLGUILD_DEVICE" in code or modality in ("audio_files", "array_files")
    assert "cuda:" not in code  # no hard-coded device ordinal


def test_the_sentence_recipe_renders_beside_tfidf():
    spec = task("text", "binary", "roc_auc")
    profile = {"n_train": 100, "columns": [{"name": "review", "kind": "text"}], "target": {}}
    meta = draft_meta("tfidf_sentences", spec, profile)
    assert meta["features"]["sentence_embeddings"] and meta["features"]["text"] == "tfidf"
    code = render_script(spec, profile, meta, "test")
    compile(code, "solution.py", "exec")
    assert "TfidfVectorizer" in code and "SentenceTransformer(SENTENCE_MODEL" in code


def test_photographs_go_to_the_backbone_and_glyphs_to_the_small_cnn():
    spec = task("image_files")
    assert photo_like({"files": {"colour": True, "min_side": 28}})
    assert photo_like({"files": {"colour": False, "min_side": 128}})
    assert not photo_like({"files": {"colour": False, "min_side": 28}}) and not photo_like(None)
    photos = recipes_for(spec, {"files": {"colour": True}})
    glyphs = recipes_for(spec, {"files": {"colour": False, "min_side": 28}})
    if RECIPES["backbone_linear"].available():
        assert photos[0] == "backbone_linear"
    assert not any(name.startswith("backbone") for name in glyphs)
    assert "backbone_finetune" not in photos or RECIPES["backbone_finetune"].available()
    assert set(glyphs) <= set(PHOTO_ORDER)


def test_the_audio_draft_takes_the_datas_sample_rate():
    spec = task("audio_files")
    meta = draft_meta(
        "audio_lightgbm", spec, {"n_train": 10, "columns": [], "target": {}, "files": {"sample_rate": 8000}}
    )
    assert meta["features"]["sample_rate"] == 8000
    assert recipes_for(spec) == ["audio_lightgbm", "audio_linear"]


@pytest.mark.parametrize(("channels", "width"), [(1, 2), (2, 2), (1, 1)])
def test_the_audio_recipes_read_aiff_clips_as_the_standard_library_wrote_them(tmp_path, channels, width):
    """The ICML 2013 whale challenge's clips are AIFF, which scipy does not read: the rendered
    script's own reader must give the samples and rate that Python's aifc module wrote."""
    import ast
    import warnings

    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # aifc leaves the standard library in 3.13
        import aifc

    rng = np.random.default_rng(channels * 10 + width)
    wave = rng.integers(-(2 ** (8 * width - 1)), 2 ** (8 * width - 1), size=(301, channels))
    path = tmp_path / "clip.aif"
    with aifc.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(width)
        out.setframerate(2000)
        out.writeframes(wave.astype(f">i{width}").tobytes())
    spec = task("audio_files")
    code = render_script(spec, PROFILE, draft_meta("audio_lightgbm", spec, PROFILE), "test")
    reader = next(n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef) and n.name == "read_aiff")
    scope: dict = {"np": np}
    exec(compile(ast.Module(body=[reader], type_ignores=[]), "solution.py", "exec"), scope)
    rate, samples = scope["read_aiff"](path)
    assert rate == 2000
    assert np.array_equal(samples, wave[:, 0] if channels == 1 else wave)


def test_the_profile_reads_an_aiff_clips_rate_and_length(tmp_path):
    import warnings

    import numpy as np
    import pandas as pd

    from mlguild.task.profile import files_line, files_profile

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import aifc

    (tmp_path / "train").mkdir()
    with aifc.open(str(tmp_path / "train" / "a.aif"), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(2000)
        out.writeframes(np.zeros(4000, dtype=">i2").tobytes())
    spec = {"file_column": "clip", "train_files": "train", "file_suffix": "", "modality": "audio_files"}
    files = files_profile(tmp_path, spec, pd.DataFrame({"clip": ["a.aif"]}))
    assert (files["sample_rate"], files["seconds"]["mean"], files["channels"]) == (2000, 2.0, [1])
    assert files_line(files).startswith("AIFF sound, sample rate 2000 Hz")
