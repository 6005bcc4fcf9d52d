"""A compact profile of the training data: what a brain needs to write a sensible script.

Computed once per run from the *workspace* files (never from sealed data), saved as
``profile.json`` in the run, and passed to brains; small enough to fit in any prompt.
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..util.exact_csv import count_rows, sample_rows
from .column_kinds import KIND_NOTES, ColumnKind, detect_kind, plainly_numeric
from .column_parsers import parse_number
from .lookup import measure_tables, table_lines

_MAX_EXAMPLES = 3


@dataclass
class ColumnProfile:
    name: str
    kind: ColumnKind
    dtype: str
    n_unique: int
    missing_fraction: float
    examples: list[str] = field(default_factory=list)


@dataclass
class DataProfile:
    n_train: int
    n_holdout: int
    n_test: int
    columns: list[ColumnProfile]
    target: dict[str, Any]
    train_only: list[str] = field(default_factory=list)  # inputs of the train file the test file lacks
    files: dict[str, Any] = field(default_factory=dict)  # what a row's input file is like (files_profile)
    tables: list[dict[str, Any]] = field(default_factory=list)  # lookup tables and their joins (task.lookup)
    profiled_rows: int | None = None  # the columns' rows when they were profiled on a sample (None: all)

    def columns_of(self, kind: ColumnKind) -> list[str]:
        return [c.name for c in self.columns if c.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataProfile:
        cols = [ColumnProfile(**c) for c in data["columns"]]
        return cls(
            data["n_train"],
            data["n_holdout"],
            data["n_test"],
            cols,
            data["target"],
            data.get("train_only", []),
            data.get("files", {}),
            data.get("tables", []),
            data.get("profiled_rows"),
        )


def _target_profile(train: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    targets = spec["target_columns"]
    info: dict[str, Any] = {"columns": targets, "task_type": spec["task_type"]}
    first = train[targets[0]]
    if spec["task_type"] in ("binary", "multiclass"):
        counts = first.astype(str).value_counts()
        info["classes"] = {str(k): int(v) for k, v in counts.head(50).items()}
        info["n_classes"] = int(counts.size)
        info["minority_fraction"] = float(counts.min() / counts.sum())
    else:
        values = parse_number(first).dropna().to_numpy(dtype=float)
        if values.size:
            mean, std = float(values.mean()), float(values.std())
            skew = float(((values - mean) ** 3).mean() / std**3) if std > 0 else 0.0
            info.update(min=float(values.min()), max=float(values.max()), mean=mean, std=std, skew=skew)
    return info


def profile_workspace(data_dir: Path, spec: dict[str, Any]) -> DataProfile:
    """Profile the workspace train file; ``spec`` is the public task dict. A train file over
    ``_SAMPLE_ABOVE_BYTES`` has its columns profiled on a seeded random sample of about
    ``_PROFILE_ROWS`` rows (its row count and its target are read whole): typing ten million
    rows as pandas does would take minutes and many GiB for figures a sample tells as well."""
    path = data_dir / spec["train_file"]
    sample = sample_rows(path, _PROFILE_ROWS, 0, spec["target_columns"]) if _big(path) else None
    if sample is None:
        train = pd.read_csv(path, low_memory=False)
        n_train, targets = len(train), train
    else:
        train, n_train, targets = sample.rows, sample.count, sample.whole
    n_holdout = _count_rows(data_dir / "holdout.csv")
    n_test = _count_rows(data_dir / spec["test_file"])
    skip = {spec["id_column"], *spec["target_columns"]}
    text_columns = spec.get("text_columns", [])
    plain = _plain_numeric_profiles(train, [c for c in train.columns if c not in skip and c not in text_columns])
    columns = []
    for name in train.columns:
        if name in skip:
            continue
        if name in plain:
            columns.append(plain[name])
            continue
        series = train[name]
        columns.append(
            ColumnProfile(
                name=str(name),
                kind=detect_kind(series, str(name), text_columns),
                dtype=str(series.dtype),
                n_unique=int(series.nunique()),
                missing_fraction=round(float(series.isna().mean()), 4),
                examples=[str(v)[:60] for v in series.dropna().head(_MAX_EXAMPLES)],
            )
        )
    test_path = data_dir / spec["test_file"]
    in_test = set(pd.read_csv(test_path, nrows=0).columns) if test_path.is_file() else set(train.columns)
    train_only = [c.name for c in columns if c.name not in in_test]
    files = files_profile(data_dir, spec, train)
    target = _target_profile(targets, spec)
    tables = measure_tables(data_dir, spec)
    profiled = None if sample is None else len(train)
    return DataProfile(n_train, n_holdout, n_test, columns, target, train_only, files, tables, profiled)


_SAMPLE_ABOVE_BYTES = 64 << 20  # a train file larger than this is profiled on a sample of rows
_PROFILE_ROWS = 200_000


def _big(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > _SAMPLE_ABOVE_BYTES


_FILE_SAMPLE = 30  # files opened to describe them: enough for sizes, colour and rates


def files_profile(data_dir: Path, spec: dict[str, Any], train: pd.DataFrame) -> dict[str, Any]:
    """What the first train rows' input files are like, for a task whose rows name files: image
    sizes and colour, or sound sample rates and lengths; {} for other tasks."""
    column = spec.get("file_column")
    if not column or column not in train:
        return {}
    folder = data_dir / str(spec.get("train_files"))
    paths = [folder / f"{v}{spec.get('file_suffix', '')}" for v in train[column].astype(str).head(_FILE_SAMPLE)]
    paths = [p for p in paths if p.is_file()]
    suffix = paths[0].suffix.lower() if paths else ""
    if suffix in (".wav", ".aif", ".aiff"):
        return _wav_profile(paths)
    if spec.get("modality") == "image_files" and paths:
        return _image_profile(paths)
    if spec.get("modality") == "array_files" and paths:
        return _array_profile(paths)
    return {}


def _array_profile(paths: list[Path]) -> dict[str, Any]:
    """The shapes of the first rows' arrays (a CSV's: rows x columns, and its header)."""
    shapes, header = [], None
    for path in paths[:10]:
        if path.suffix.lower() == ".csv":
            frame = pd.read_csv(path)
            shapes.append(list(frame.shape))
            header = header or [str(c) for c in frame.columns[:12]]
        else:
            shapes.append(list(np.load(path, mmap_mode="r", allow_pickle=False).shape))
    return {"kind": "array", "sampled": len(shapes), "shapes": shapes[:5], **({"columns": header} if header else {})}


def _image_profile(paths: list[Path]) -> dict[str, Any]:
    from PIL import Image

    sizes, modes = [], set()
    for path in paths:
        with Image.open(path) as image:
            sizes.append(image.size)
            modes.add(image.mode)
    colour = any(m in ("RGB", "RGBA", "P", "CMYK", "YCbCr") for m in modes)
    widths, heights = [w for w, _ in sizes], [h for _, h in sizes]
    return {
        "kind": "image",
        "sampled": len(paths),
        "min_side": min(min(widths), min(heights)),
        "median_size": f"{sorted(widths)[len(widths) // 2]} x {sorted(heights)[len(heights) // 2]}",
        "colour": colour,
        "modes": sorted(modes),
    }


def _aiff_header(path: Path) -> tuple[int, int, int]:
    """(sample rate, frames, channels) from an AIFF file's COMM chunk (its rate an 80-bit float)."""
    data = path.read_bytes()[:4096]
    at = data.find(b"COMM")
    if data[:4] != b"FORM" or at < 0:
        raise ValueError(f"{path} is not an AIFF file")
    body = data[at + 8 : at + 26]
    channels, frames = int.from_bytes(body[0:2], "big"), int.from_bytes(body[2:6], "big")
    exponent, mantissa = int.from_bytes(body[8:10], "big") & 0x7FFF, int.from_bytes(body[10:18], "big")
    return round(mantissa * 2.0 ** (exponent - 16383 - 63)), frames, channels


def _wav_profile(paths: list[Path]) -> dict[str, Any]:
    from scipy.io import wavfile

    rates, seconds, channels = [], [], set()
    for path in paths:
        if path.suffix.lower() in (".aif", ".aiff"):
            rate, frames, count = _aiff_header(path)
        else:
            rate, wave = wavfile.read(path, mmap=True)
            frames, count = len(wave), 1 if wave.ndim == 1 else int(wave.shape[1])
        rates.append(int(rate))
        seconds.append(frames / rate)
        channels.add(count)
    common = max(set(rates), key=rates.count)
    return {
        "kind": "audio",
        "format": "AIFF" if paths[0].suffix.lower() in (".aif", ".aiff") else "wav",
        "sampled": len(paths),
        "sample_rate": common,
        "sample_rates": sorted(set(rates)),
        "seconds": {
            "min": round(min(seconds), 3),
            "mean": round(sum(seconds) / len(seconds), 3),
            "max": round(max(seconds), 3),
        },
        "channels": sorted(channels),
    }


def _plain_numeric_profiles(train: pd.DataFrame, names: list) -> dict[str, ColumnProfile]:
    """The profiles of the columns of numbers whose names say neither id nor time, computed a
    block of columns at a time with what ``detect_kind`` and the per-column loop would say
    (numeric, constant or empty): a table of 50,000 such columns is profiled in seconds."""
    by_dtype: dict[str, list[str]] = {}
    for name in names:
        dtype = train[name].dtype
        if (
            pd.api.types.is_numeric_dtype(dtype)
            and not pd.api.types.is_bool_dtype(dtype)
            and plainly_numeric(str(name))
        ):
            by_dtype.setdefault(str(dtype), []).append(name)
    found: dict[str, ColumnProfile] = {}
    step = max(1, 2_000_000 // max(1, len(train)))
    for dtype, group in by_dtype.items():
        for start in range(0, len(group), step):
            block_names = group[start : start + step]
            block = train[block_names].to_numpy(dtype=dtype)
            missing = np.isnan(block) if block.dtype.kind == "f" else np.zeros(block.shape, dtype=bool)
            ordered = np.sort(block, axis=0)  # NaN last
            present = ~np.isnan(ordered) if block.dtype.kind == "f" else np.ones(block.shape, dtype=bool)
            changes = ((ordered[1:] != ordered[:-1]) & present[1:]).sum(axis=0)
            n_unique = np.where(present.any(axis=0), 1 + changes, 0)
            for j, name in enumerate(block_names):
                values = block[~missing[:, j], j]
                kind: ColumnKind = "empty" if values.size == 0 else "constant" if n_unique[j] <= 1 else "numeric"
                found[name] = ColumnProfile(
                    name=str(name),
                    kind=kind,
                    dtype=dtype,
                    n_unique=int(n_unique[j]),
                    missing_fraction=round(float(missing[:, j].mean()) if len(block) else float("nan"), 4),
                    examples=[str(v)[:60] for v in values[:_MAX_EXAMPLES]],
                )
    return found


def _count_rows(path: Path) -> int:
    """The data rows of a CSV file as a CSV reader counts them: a quoted text field may hold
    line breaks, so counting lines would overstate them (tweets, reviews)."""
    if not path.exists():
        return 0
    if _big(path) and (counted := count_rows(path)) is not None:
        return counted
    csv.field_size_limit(1 << 30)  # a long text field is a row, not an error
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        return max(0, sum(1 for row in csv.reader(fh) if row) - 1)


def summary_text(profile: DataProfile, max_columns: int = 60) -> str:
    """A short human-readable summary for reports and prompts (bounded in size)."""
    lines = [f"train rows: {profile.n_train}, holdout rows: {profile.n_holdout}, test rows: {profile.n_test}"]
    if profile.profiled_rows is not None:
        lines.append(
            f"(the columns below were profiled on a random sample of {profile.profiled_rows} train rows: "
            "their unique counts are the sample's; the target on every row)"
        )
    kinds: dict[str, int] = {}
    for c in profile.columns:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    lines.append("feature kinds: " + ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())))
    lines += [f"  ({kind}: {KIND_NOTES[kind]})" for kind in sorted(kinds) if kind not in ("numeric", "categorical")]
    for c in profile.columns[:max_columns]:
        example = f", e.g. {c.examples[0]!r}" if c.examples and c.kind not in ("numeric", "categorical") else ""
        lines.append(
            f"- {c.name}: {c.kind} ({c.dtype}), {c.n_unique} unique, {c.missing_fraction:.1%} missing{example}"
        )
    if len(profile.columns) > max_columns:
        lines.append(f"- ... and {len(profile.columns) - max_columns} more columns")
    if profile.train_only:
        lines.append(f"not in the test file (unusable as inputs): {', '.join(profile.train_only[:20])}")
    if profile.files:
        lines.append(f"input files ({profile.files.get('sampled')} sampled): {files_line(profile.files)}")
    if profile.tables:
        lines += ["lookup tables (join them by their keys):", *table_lines(profile.tables)]
    lines.append(f"target: {profile.target}")
    return "\n".join(lines)


def files_line(files: dict[str, Any]) -> str:
    """One line on what the rows' input files are like (files_profile)."""
    if files.get("kind") == "audio":
        s = files["seconds"]
        return (
            f"{files.get('format', 'wav')} sound, sample rate {files['sample_rate']} Hz (seen: {files['sample_rates']}), "
            f"{s['min']}-{s['max']} s long (mean {s['mean']} s), channels {files['channels']}"
        )
    if files.get("kind") == "array":
        columns = f", columns {files['columns']}" if files.get("columns") else ""
        return f"arrays of shapes {files['shapes']} (the first rows'){columns}"
    if files.get("kind") == "image":
        colour = "colour" if files["colour"] else "grey"
        return f"{colour} images ({', '.join(files['modes'])}), median {files['median_size']} px, shortest side {files['min_side']} px"
    return str(files)


__all__ = ["ColumnProfile", "DataProfile", "profile_workspace", "summary_text"]
