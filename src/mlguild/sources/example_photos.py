"""The photos example's data: seeded crops of the colour photographs that scikit-image and
scikit-learn ship inside their wheels, and the image files a task folder holds them in
(mlguild.sources.examples builds the example)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.errors import TaskError
from ..task.spec import TaskSpec

# The colour photographs that scikit-image and scikit-learn ship inside their wheels (no
# package found here ships a labelled photograph collection): (package, file).
_PHOTOS = [
    ("skimage", "astronaut.png"),
    ("skimage", "chelsea.png"),
    ("skimage", "coffee.png"),
    ("skimage", "rocket.jpg"),
    ("skimage", "ihc.png"),
    ("skimage", "retina.jpg"),
    ("skimage", "motorcycle_left.png"),
    ("sklearn", "china.jpg"),
    ("sklearn", "flower.jpg"),
]
PHOTO_CROPS = 70  # crops per photograph
PHOTO_SIDE = 96  # pixels of a stored crop


def _photo(package: str, name: str):
    import importlib.util

    from PIL import Image

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise TaskError(f"the photos example needs the {package} package", "pip install 'mlguild[examples]'")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / ("data" if package == "skimage" else "datasets/images") / name
    with Image.open(path) as image:
        return image.convert("RGB")


def photo_crops(seed: int) -> pd.DataFrame:
    """Crops of nine real colour photographs (an astronaut, a cat, coffee, a rocket, tissue under
    a microscope, a retina, a motorcycle, a Chinese temple, a flower) at random places, sizes
    (10 to 25% of the photograph's shorter side) and mirrorings, seeded; the label is the
    photograph a crop comes from. The pixels column holds each crop until write_images writes
    it as a JPEG file."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    rows = []
    for package, name in _PHOTOS:
        photo = _photo(package, name)
        width, height = photo.size
        for _ in range(PHOTO_CROPS):
            side = int(rng.uniform(0.1, 0.25) * min(width, height))
            left, top = int(rng.integers(0, width - side + 1)), int(rng.integers(0, height - side + 1))
            crop = photo.crop((left, top, left + side, top + side)).resize(
                (PHOTO_SIDE, PHOTO_SIDE), Image.Resampling.BILINEAR
            )
            if rng.random() < 0.5:
                crop = crop.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
            rows.append({"label": name.rsplit(".", 1)[0], "pixels": crop})
    order = rng.permutation(len(rows))
    frame = pd.DataFrame([rows[i] for i in order])
    frame.insert(0, "image", [f"photo_{k:04d}" for k in range(len(frame))])
    return frame


def write_images(public: Path, spec: TaskSpec, *frames: pd.DataFrame) -> list[pd.DataFrame]:
    """Write each row's image (its ``pixels``) as a file in the train or test folder; the
    frames come back without the images."""
    out = []
    for frame, folder in zip(frames, (str(spec.train_files), str(spec.test_files)), strict=True):
        (public / folder).mkdir(parents=True, exist_ok=True)
        for name, image in zip(frame[str(spec.file_column)], frame["pixels"], strict=True):
            image.save(public / folder / f"{name}{spec.file_suffix}", quality=90)
        out.append(frame.drop(columns=["pixels"]))
    return out
