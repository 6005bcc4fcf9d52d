"""Archives in a competition folder are read as if unpacked where they lie (MLE-bench zips
aerial-cactus-identification's image folders, the whale challenge's train2/): inference sees
their files (7z ones too), the converted task folder holds them unpacked and not the archives, and a member
whose path would climb out of the folder is never written."""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile

import pandas as pd
import pytest
from test_sample_test_rows import cactus_folder, listing, pack_folder

from mlguild.core.errors import TaskError
from mlguild.sources.folder_files import FolderFiles, members, unpack
from mlguild.sources.infer import infer_task
from mlguild.sources.resolve import folder_task


def test_members_are_read_as_unpacked_beside_the_archive_and_hostile_ones_passed_over(tmp_path):
    with zipfile.ZipFile(tmp_path / "train.zip", "w") as z:
        for name in ("a.jpg", "sub/b.jpg", "../escape.txt", "/abs.txt", "__MACOSX/._a.jpg", ".hidden"):
            z.writestr(name, b"x")
    with zipfile.ZipFile(tmp_path / "train2.zip", "w") as z:  # one folder holds everything: kept as it is
        z.writestr("train2/c.aif", b"y")
    buffer = io.BytesIO(b"z")
    with tarfile.open(tmp_path / "test.tar.gz", "w:gz") as t:
        info = tarfile.TarInfo("d.png")
        info.size = 1
        t.addfile(info, buffer)
        link = tarfile.TarInfo("link.png")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(link)
    (tmp_path / "train.csv.zip").write_bytes(b"")  # a zipped table is a table, not an archive of files
    assert sorted(members(tmp_path / "train.zip")) == ["train/a.jpg", "train/sub/b.jpg"]
    assert sorted(members(tmp_path / "train2.zip")) == ["train2/c.aif"]
    assert sorted(members(tmp_path / "test.tar.gz")) == ["test/d.png"]
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "a.jpg").write_bytes(b"on disk")  # a file on the disk wins over a member
    # archives named so that their folder would be no plain name are never read: .zip, ...zip
    for hostile in (".zip", "...zip"):
        with zipfile.ZipFile(tmp_path / hostile, "w") as z:
            z.writestr("tmp/evil.txt" if hostile == ".zip" else "up.txt", b"x")
    disk = FolderFiles.of(tmp_path)
    assert not disk.is_file("test", "d.png")  # the disk's files alone, until the archives are asked for
    files = disk.with_archives()
    assert {"train/a.jpg", "train/sub/b.jpg", "train2/c.aif", "test/d.png"} <= files.files
    assert not {f for f in files.files if "evil" in f or "up.txt" in f}
    assert "train/a.jpg" not in files.packed and files.is_file("test", "d.png")
    dest = tmp_path / "out"
    assert unpack(files.archives(), dest, under=("train", "test")) == 3  # train2/ is no rows' folder here
    assert sorted(listing(dest)) == sorted(
        ["train", "train/a.jpg", "train/sub", "train/sub/b.jpg", "test", "test/d.png"]
    )
    assert unpack(files.archives(), dest) == 1  # then the rest; what is there already is kept
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path.parent / "escape.txt").exists()


def test_a_folder_whose_images_are_zipped_is_converted_with_them_unpacked(tmp_path):
    folder = cactus_folder(tmp_path / "aerial-cactus-identification")
    public = folder / "prepared" / "public"
    pack_folder(public, "train")
    pack_folder(public, "test")
    before = listing(folder)
    inferred = infer_task(folder)
    spec = inferred.spec
    assert (spec.file_column, spec.train_files, spec.test_files, spec.modality) == (
        "id",
        "train",
        "test",
        "image_files",
    )
    assert [p.name for p in inferred.unpacked] == ["test.zip", "train.zip"]
    task = folder_task(folder, None, None)
    assert listing(folder) == before
    train = pd.read_csv(task.train_path, dtype=str)
    assert sorted(p.name for p in (task.public_dir / "train").iterdir()) == sorted(train["id"])
    assert len(list((task.public_dir / "test").iterdir())) == 4
    assert not list(task.public_dir.glob("*.zip"))  # the archives stay out: their files are there


def test_a_folder_whose_images_are_packed_in_7z_archives_is_converted_with_them_unpacked(tmp_path):
    pytest.importorskip("py7zr")
    folder = cactus_folder(tmp_path / "invasive-species-monitoring")
    public = folder / "prepared" / "public"
    pack_folder(public, "train", nested=True, suffix=".7z")  # train.7z holds train/x.png
    pack_folder(public, "test", suffix=".7z")  # test.7z holds x.png
    assert sorted(members(public / "test.7z")) == [f"test/{k:032x}.png" for k in range(8, 12)]
    inferred = infer_task(folder)
    assert (inferred.spec.file_column, inferred.spec.modality) == ("id", "image_files")
    assert [p.name for p in inferred.unpacked] == ["test.7z", "train.7z"]
    task = folder_task(folder, None, None)
    train = pd.read_csv(task.train_path, dtype=str)
    assert sorted(p.name for p in (task.public_dir / "train").iterdir()) == sorted(train["id"])
    assert len(list((task.public_dir / "test").iterdir())) == 4
    assert not list(task.public_dir.glob("*.7z")) and not list(task.public_dir.glob(".unpacking-*"))


def test_a_damaged_7z_archive_holds_nothing_and_the_refusal_says_to_unpack_it(tmp_path):
    folder = cactus_folder(tmp_path / "comp")
    public = folder / "prepared" / "public"
    shutil.rmtree(public / "test")
    (public / "test.7z").write_bytes(b"7z\xbc\xaf\x27\x1c damaged")
    assert members(public / "test.7z") == {}
    with pytest.raises(TaskError) as refused:
        infer_task(folder)
    assert "unpack the archives that may hold the files (test.7z)" in refused.value.fix


def test_a_zipped_train_folder_of_labelled_names_is_unpacked_renamed_and_left_out(tmp_path):
    public = tmp_path / "whale" / "public"
    (public / "train2").mkdir(parents=True)
    (public / "test2").mkdir()
    for n in range(12):
        (public / "train2" / f"2009032{n // 6}_000000_{n:03d}s3ms_TRAIN{n}_{n % 2}.aif").write_bytes(b"")
    tests = [f"20090330_000000_{n:03d}s0ms_Test{n}.aif" for n in range(4)]
    for name in tests:
        (public / "test2" / name).write_bytes(b"")
    pack_folder(public, "train2", nested=True)
    pack_folder(public, "test2", nested=True)
    (public / "sampleSubmission.csv").write_text("clip,probability\n" + "".join(f"{t},0\n" for t in tests))
    (public / "description.md").write_text("# whale\n\n## Evaluation\n\nJudged on area under the ROC curve.\n")
    inferred = infer_task(tmp_path / "whale")
    assert (inferred.spec.target_columns, inferred.spec.modality) == (["probability"], "audio_files")
    assert any("labelled by the last part of each file's name" in note for note in inferred.notes)
    task = folder_task(tmp_path / "whale", None, None)
    names = sorted(p.name for p in (task.public_dir / "train2").iterdir())
    assert len(names) == 12 and not any("TRAIN" in n for n in names)  # renamed: no name tells its label
    assert sorted(p.name for p in (task.public_dir / "test2").iterdir()) == tests
    assert not list(task.public_dir.glob("*.zip"))
