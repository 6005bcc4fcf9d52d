"""Every file of a competition's data folder by its path, those its archives hold among them.

MLE-bench's prepare.py zips several competitions' image and sound folders (aerial-cactus-
identification's ``train.zip`` and ``test.zip``, the ICML 2013 whale challenge's ``train2.zip``),
and a Kaggle download often holds ``train_images.zip`` beside the tables. Inference reads an
archive's members as if it were unpacked into a folder named by it: ``train.zip``'s ``x.jpg`` is
``train/x.jpg`` (mlebench.utils.compress names members inside the folder it packs), and
inaturalist-2019's ``train_val2019.tar.gz``'s ``Plants/400/x.jpg`` is
``train_val2019/Plants/400/x.jpg``, where its metadata says it is; members that all start with
that folder already keep their paths (``train2.zip``'s ``train2/x.aif``, as shutil.make_archive
names them). 7z archives (invasive-species-monitoring's ``train.7z``) are read the same way
with ``py7zr``; where it is not installed, or an archive is damaged or encrypted, the archive
holds nothing here and a refusal names it to unpack by hand. A file already on the disk wins over a member of the same path. Archives are
listed only when the files on the disk do not make the task (``FolderFiles.with_archives``:
listing a .tar.gz reads it whole), and the converted task folder (``sources/convert_folder``)
then holds the members of the rows' folders unpacked.

Only plain files with plain relative paths are members: a path that climbs out (``../x``), an
absolute path, a link or a device in a tar file is passed over, so an archive cannot write
outside the task folder.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz", ".7z")
_TABLES = (
    ".csv.zip",
    ".tsv.zip",
    ".csv.7z",
    ".tsv.7z",
    ".json.7z",
)  # one table packed: read as a table (sources/tables)
_SKIP = ("__MACOSX",)  # folders archivers add that hold no data


def archive_files(data_dir: Path) -> list[Path]:
    """The archives directly in ``data_dir`` that hold files, not one zipped table (and none
    whose name is hidden or makes no plain folder name: ``.zip``, ``...zip``)."""
    return sorted(
        p
        for p in data_dir.iterdir()
        if p.is_file()
        and p.name.lower().endswith(ARCHIVES)
        and not p.name.lower().endswith(_TABLES)
        and _plain(_stem(p)) == _stem(p)
    )


def _stem(archive: Path) -> str:
    name = archive.name
    for suffix in sorted(ARCHIVES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _plain(name: str) -> str | None:
    """The member name as a plain relative path, or None for one that is not (climbs out, absolute, hidden)."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or not path.parts or any(p in ("..", "") for p in path.parts):
        return None
    if any(part.startswith(".") or part in _SKIP for part in path.parts):
        return None
    return path.as_posix()


def members(archive: Path) -> dict[str, str]:
    """The files ``archive`` holds: {path as unpacked beside it: name in the archive}; {} when it
    cannot be read (a damaged or encrypted archive is as good as none)."""
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                names = [i.filename for i in z.infolist() if not i.is_dir()]
        elif archive.name.lower().endswith(".7z"):
            names = _7z_names(archive)
        else:
            with tarfile.open(archive) as t:
                names = [m.name for m in t.getmembers() if m.isfile()]
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError):
        return {}
    plain = {name: rel for name in names if (rel := _plain(name)) is not None}
    firsts = {PurePosixPath(rel).parts[0] for rel in plain.values()}
    nested = firsts == {_stem(archive)} and all(len(PurePosixPath(rel).parts) > 1 for rel in plain.values())
    prefix = "" if nested else f"{_stem(archive)}/"
    return {f"{prefix}{rel}": name for name, rel in plain.items()}


def _7z_names(archive: Path) -> list[str]:
    """The plain files a 7z archive holds; none where py7zr is missing or cannot read it."""
    try:
        import py7zr
    except ImportError:
        return []
    try:
        with py7zr.SevenZipFile(archive) as z:
            return [i.filename for i in z.list() if i.is_file and not i.is_symlink]
    except (
        py7zr.exceptions.ArchiveError,  # Bad7zFile among them
        py7zr.exceptions.PasswordRequired,
        py7zr.exceptions.UnsupportedCompressionMethodError,
        ValueError,
    ):
        return []  # damaged, encrypted or compressed in a way py7zr lacks


@dataclass
class FolderFiles:
    """The data folder's files by relative path (text, '/'-separated), archives' members among them."""

    root: Path
    files: set[str] = field(default_factory=set)
    packed: dict[str, tuple[Path, str]] = field(default_factory=dict)  # path -> (archive, member): not on disk

    @classmethod
    def of(cls, data_dir: Path, skip=lambda rel: False) -> FolderFiles:
        """The files on the disk in ``data_dir`` (hidden ones, and those ``skip`` names by their
        first part, left out); ``with_archives`` adds the archives' members."""
        found = cls(data_dir)
        for path in data_dir.rglob("*"):
            rel = path.relative_to(data_dir)
            if path.is_file() and not skip(rel) and not any(part.startswith(".") for part in rel.parts):
                found.files.add(rel.as_posix())
        return found

    def with_archives(self) -> FolderFiles:
        """These files and the members of the folder's archives (listing a .tar.gz reads it
        whole: done only when the files on the disk do not make the task)."""
        found = FolderFiles(self.root, set(self.files))
        for archive in archive_files(self.root):
            for inside, member in members(archive).items():
                if inside not in found.files:
                    found.packed[inside] = (archive, member)
        found.files |= set(found.packed)
        return found

    @property
    def folders(self) -> list[str]:
        """Every folder a file lies in (and those above it), '' for the data folder itself."""
        parents = {p.as_posix() for f in self.files for p in PurePosixPath(f).parents}
        return sorted("" if p == "." else p for p in parents)

    @property
    def names(self) -> set[str]:
        return {f.rsplit("/", 1)[-1] for f in self.files}

    def is_file(self, folder: str, name: str) -> bool:
        return (f"{folder}/{name}" if folder else name) in self.files

    def archives(self) -> list[Path]:
        """The archives that hold files the disk does not have: to unpack when the task uses its files."""
        return sorted({archive for archive, _ in self.packed.values()})


def unpack(archives: list[Path], dest: Path, under: tuple[str, ...] = ("",)) -> int:
    """Unpack into ``dest`` every member of ``archives`` in one of the folders ``under`` ('' for
    all) whose path is not a file there yet, as ``FolderFiles`` reads it; the number of files
    written. A path that would lie outside ``dest`` is never written."""
    written, top = 0, dest.resolve()
    for archive in archives:
        wanted = {
            name: rel
            for rel, name in members(archive).items()
            if any(not f or rel.startswith(f"{f}/") for f in under)
            and not (dest / rel).exists()
            and (dest / rel).resolve().is_relative_to(top)
        }
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                for name, rel in wanted.items():
                    (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                    with z.open(name) as source, open(dest / rel, "wb") as target:
                        shutil.copyfileobj(source, target)
                    written += 1
        elif archive.name.lower().endswith(".7z"):
            written += _unpack_7z(archive, wanted, dest)
        else:
            with tarfile.open(archive) as t:
                for entry in t.getmembers():
                    where = wanted.get(entry.name)
                    content = t.extractfile(entry) if where is not None and entry.isfile() else None
                    if content is None or where is None:
                        continue
                    (dest / where).parent.mkdir(parents=True, exist_ok=True)
                    with content, open(dest / where, "wb") as target:
                        shutil.copyfileobj(content, target)
                    written += 1
    return written


def _unpack_7z(archive: Path, wanted: dict[str, str], dest: Path) -> int:
    """Unpack the members ``wanted`` ({name in the archive: path under dest}) of a 7z archive.
    py7zr writes members under their own names, so they go to a scratch folder beside ``dest``
    first and are moved from there to the paths chosen here (the names were checked plain)."""
    if not wanted:
        return 0
    import py7zr

    with tempfile.TemporaryDirectory(dir=dest, prefix=".unpacking-") as scratch:
        with py7zr.SevenZipFile(archive) as z:
            z.extract(path=scratch, targets=list(wanted))
        for name, rel in wanted.items():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(Path(scratch) / name, dest / rel)
    return len(wanted)
