"""A competition folder whose labels are in COCO-style metadata (the FGVC competitions:
herbarium's ``train/metadata.json``, iwildcam-2020's annotations, inaturalist's ``train2019.json``)
gets its train table from the annotations; the converted task folder holds the images renamed
by their ids (the FGVC folders and names tell the category) and none of the metadata files."""

from __future__ import annotations

import json

import pandas as pd
from test_sample_test_rows import listing

from mlguild.metrics import get_metric
from mlguild.sources.annotated_files import annotated_train_files
from mlguild.sources.folder_files import FolderFiles
from mlguild.sources.infer import infer_task
from mlguild.sources.labelled_files import TRAIN_FILES_FROM
from mlguild.sources.resolve import folder_task


def herbarium_folder(root, n_train: int = 12, n_test: int = 4, test_list: bool = False):
    """herbarium-2022-fgvc9's public layout: train images in folders (and with names) made of
    their category, a train metadata dict with annotations, test images listed with no label."""
    public = root / "public"
    images, notes = [], []
    for n in range(n_train):
        category = (3, 155, 15504)[n % 3]
        image_id = f"{category:05d}__{n:03d}"
        name = f"{category:05d}/{image_id}.jpg"
        (public / "train_images" / name).parent.mkdir(parents=True, exist_ok=True)
        (public / "train_images" / name).write_bytes(b"")
        images.append({"image_id": image_id, "file_name": name})
        notes.append({"image_id": image_id, "category_id": category})
    (public / "train_metadata.json").write_text(json.dumps({"images": images, "annotations": notes}))
    tests = [{"image_id": str(k), "file_name": f"000/test-{k:06d}.jpg"} for k in range(n_test)]
    for t in tests:
        (public / "test_images" / t["file_name"]).parent.mkdir(parents=True, exist_ok=True)
        (public / "test_images" / t["file_name"]).write_bytes(b"")
    (public / "test_metadata.json").write_text(json.dumps(tests if test_list else {"images": tests}))
    (public / "sample_submission.csv").write_text("Id,Predicted\n" + "".join(f"{k},42\n" for k in range(n_test)))
    (public / "description.md").write_text("# herbarium\n\n## Evaluation\n\nEvaluated using the macro F1 score.\n")
    return root


def test_the_annotations_make_the_train_table_and_the_images_are_renamed(tmp_path):
    folder = herbarium_folder(tmp_path / "herbarium-2022-fgvc9", test_list=True)
    before = listing(folder)
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.id_column, spec.target_columns, spec.metric, spec.task_type) == (
        "Id",
        ["Predicted"],
        "f1_macro",
        "multiclass",
    )
    # the deepest folders that hold every train image, and every test image
    assert (spec.train_files, spec.test_files) == ("train_images", "test_images/000")
    assert (spec.file_suffix, spec.modality) == (".jpg", "image_files")
    task = folder_task(folder, None, None)
    assert listing(folder) == before
    train = pd.read_csv(task.train_path, dtype=str)
    assert sorted(train["Predicted"]) == sorted(["3", "155", "15504"] * 4)
    public = task.public_dir
    assert sorted(p.name for p in (public / "train_images").iterdir()) == sorted(f"{i}.jpg" for i in train["Id"])
    assert sorted(p.name for p in (public / "test_images" / "000").iterdir()) == [f"{k}.jpg" for k in range(4)]
    assert not list(public.glob("*.json"))  # the train metadata holds every label, the holdout's too
    origin = pd.read_csv(task.root / TRAIN_FILES_FROM, dtype=str).merge(train, on="Id")
    assert all(row.file.startswith(f"train_images/{int(row.Predicted):05d}/") for row in origin.itertuples())


def test_an_image_with_two_categories_or_a_sample_of_other_ids_is_no_such_folder(tmp_path):
    folder = herbarium_folder(tmp_path / "h")
    files = FolderFiles.of(folder / "public")
    sample = pd.read_csv(folder / "public" / "sample_submission.csv", dtype=str)
    assert annotated_train_files(files, sample, "Id", "Predicted") is not None
    assert annotated_train_files(files, sample.assign(Id="x" + sample["Id"]), "Id", "Predicted") is None
    metadata = json.loads((folder / "public" / "train_metadata.json").read_text())
    # ids are each listing's own: a train image whose id is also a test image's stays a train row
    metadata["images"][0]["image_id"] = metadata["annotations"][0]["image_id"] = "0"
    (folder / "public" / "train_metadata.json").write_text(json.dumps(metadata))
    found = annotated_train_files(FolderFiles.of(folder / "public"), sample, "Id", "Predicted")
    assert found is not None and len(found.table) == 12
    # the test images are renamed by their ids: an id that is no plain file name is no such folder
    tests = json.loads((folder / "public" / "test_metadata.json").read_text())
    tests["images"][0]["image_id"] = "../../escaped"
    (folder / "public" / "test_metadata.json").write_text(json.dumps(tests))
    hostile = sample.assign(Id=["../../escaped", *sample["Id"][1:]])
    assert annotated_train_files(FolderFiles.of(folder / "public"), hostile, "Id", "Predicted") is None
    tests["images"][0]["image_id"] = "0"
    (folder / "public" / "test_metadata.json").write_text(json.dumps(tests))
    assert annotated_train_files(FolderFiles.of(folder / "public"), sample, "Id", "Predicted") is not None
    metadata["annotations"].append({"image_id": metadata["images"][0]["image_id"], "category_id": 7})
    (folder / "public" / "train_metadata.json").write_text(json.dumps(metadata))
    assert annotated_train_files(FolderFiles.of(folder / "public"), sample, "Id", "Predicted") is None


def test_top_1_error_is_a_metric_and_a_description_names_it(tmp_path):
    assert get_metric("error_rate")(["a", "b", "c", "d"], ["a", "b", "a", "a"]) == 0.5
    assert get_metric("error_rate").direction == "minimize"
    folder = herbarium_folder(tmp_path / "inat")
    (folder / "public" / "description.md").write_text(
        "# inat\n\n## Evaluation\n\nWe use top-1 classification error as the metric for this competition.\n"
    )
    assert infer_task(folder).spec.metric == "error_rate"
