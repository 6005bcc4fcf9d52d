"""A sample submission whose id column is not a column of the test file, but is made of its
columns (and a sample written with its pandas index, an unnamed first column numbering the rows:
iwildcam-2019-fgvc6's, whose index is left out): the same ids under another name (iwildcam-2019-fgvc6's ``Id`` for the test file's
``id``), or two columns joined by ``_`` (the text normalization challenges' ``id`` for
``sentence_id`` and ``token_id``, ``"12_3"``). Found only when the made ids equal the sample's
row by row (the sample lists the test rows in order) and are unique, and when the train file
has those columns too; else the folder stays refused. Such a task is converted into a folder
of mlguild's own (``sources/convert_folder``), its train and test files written with the id
column added (a renamed column is dropped, a joined pair kept as inputs).

A sample that puts its prediction first and repeats the test file's columns after it
(detecting-insults-in-social-commentary: ``Insult, Date, Comment``, its grader joining on
``Comment``) keys the rows by the one repeated column whose values are unique (``key_after_prediction``);
the converted sample submission is then that key and the prediction, and the train and test
files get a copy of the key as an input (``Comment_text``): the key is the row's text, which
a model must read, while every script leaves the id column out of its features."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

JOIN = "_"  # how the competitions join the columns of an id


def made_id(frame: pd.DataFrame, made_of: tuple[str, ...]) -> pd.Series:
    """The id of each row of ``frame`` made of its columns ``made_of`` (one: that column)."""
    values = frame[made_of[0]].astype(str)
    for column in made_of[1:]:
        values = values + JOIN + frame[column].astype(str)
    return values


def id_made_of(sample: pd.DataFrame, test: pd.DataFrame, train_columns: list[str], id_column: str) -> tuple[str, ...]:
    """The test columns the sample's ids are made of (one, or two joined by ``_``); () when no
    one column or ordered pair makes exactly those ids, or more than one does."""
    if id_column not in sample:  # an unnamed column, read under pandas' name for it
        return ()
    ids = sample[id_column].astype(str).reset_index(drop=True)
    if id_column in train_columns or len(ids) != len(test) or ids.empty or ids.duplicated().any():
        return ()
    test = test.reset_index(drop=True)
    usable = [c for c in test.columns if c in train_columns and c != id_column]
    singles = [(c,) for c in usable if made_id(test, (c,)).equals(ids)]
    pairs = [(a, b) for a in usable for b in usable if a != b and made_id(test, (a, b)).equals(ids)]
    found = singles or pairs
    return found[0] if len(found) == 1 else ()


def key_after_prediction(sample: pd.DataFrame, test: pd.DataFrame, train_columns: list[str]) -> str | None:
    """The column that keys the rows of a sample submission whose first column is a prediction (a
    train column the test file lacks) and whose other columns repeat the test file's row by row:
    the one of those whose values are filled and unique; None when the sample is not so, or when
    none or several of them could key the rows."""
    first, rest = str(sample.columns[0]), [str(c) for c in sample.columns[1:]]
    if first in test.columns or first not in train_columns or not rest or any(c not in test.columns for c in rest):
        return None
    n = min(len(sample), len(test))
    if n == 0:
        return None
    head, rows = sample.head(n).reset_index(drop=True), test.head(n).reset_index(drop=True)
    if any(not head[c].astype(str).equals(rows[c].astype(str)) for c in rest):  # not the test rows in order
        return None
    keys = [c for c in rest if rows[c].astype(str).ne("").all() and rows[c].is_unique]
    # A measurement unique by chance (a timestamp a row, a number) keys nothing: text does.
    named = [c for c in keys if not _measured(rows[c].astype(str))]
    keys = named or keys
    return keys[0] if len(keys) == 1 else None


def made_of_note(made_of: tuple[str, ...], id_column: str, sample_name: str, test_name: str, train_name: str) -> str:
    """What inference says of a submission id made of the test file's columns ``made_of``."""
    made = "the column " + repr(made_of[0]) if len(made_of) == 1 else f"{made_of} joined by {JOIN!r}"
    return f"{sample_name}'s id {id_column!r} is {made} of {test_name} and {train_name}"


def prediction_first_note(sample_name: str, test_name: str, prediction: str, key: str, train_columns: list[str]) -> str:
    """What inference says of a sample submission whose ``prediction`` comes first and whose
    rows are keyed by the test rows' column ``key`` after it."""
    return (
        f"{sample_name} puts its prediction {prediction!r} first and repeats {test_name}'s columns after it: "
        f"the rows are keyed by {key!r}, the one of them filled and unique (a submission: {key}, {prediction}); "
        f"a copy of it is an input, {key_copy_name(key, train_columns)!r}"
    )


def key_copy_name(key: str, columns: list[str]) -> str:
    """The name of the input column that copies the key ``key``: ``<key>_text``, made unique."""
    name = f"{key}_text"
    while name in columns:
        name += "_"
    return name


def with_key_copy(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """``frame`` with a copy of its key column as an input, right after it."""
    out = frame.copy()
    out.insert(list(out.columns).index(key) + 1, key_copy_name(key, list(out.columns)), out[key])
    return out


def _measured(values: pd.Series) -> bool:
    """Whether every value reads as a number or a date (``20120618192155Z``, ``2012-06-09``)."""
    if pd.to_numeric(values, errors="coerce").notna().all():
        return True
    digits = values.str.replace(r"[^0-9]", "", regex=True).str.len() / values.str.len().clip(lower=1)
    return bool((digits >= 0.6).all())


def with_id(frame: pd.DataFrame, id_column: str, made_of: tuple[str, ...]) -> pd.DataFrame:
    """``frame`` with the id column first, made of ``made_of`` (a single column renamed away)."""
    out = frame.copy()
    out.insert(0, id_column, made_id(frame, made_of).to_numpy())
    return out.drop(columns=list(made_of)) if len(made_of) == 1 else out


def predicts(sample_values: pd.Series, target: pd.Series) -> bool:
    """Whether the one prediction column of a sample, named otherwise than the one target
    (iwildcam's ``Predicted`` for ``category_id``), holds values of the target's kind: labels
    of it, or numbers for a numeric target."""
    given, labels = set(sample_values.astype(str)) - {""}, set(target.astype(str)) - {""}
    if given and labels and given <= labels:
        return True
    numbers = pd.to_numeric(pd.Series(sorted(given | labels)), errors="coerce")
    return bool(given and labels) and not numbers.isna().any()


def pandas_index(path: Path, header: list[str]) -> bool:
    """Whether the CSV ``path``'s first column is pandas' index written with it: unnamed, and
    numbering the rows 0, 1, 2, ... (checked on the first rows)."""
    if not header or header[0] != "" or len(header) < 3:
        return False
    first = pd.read_csv(path, usecols=[0], nrows=1000, dtype=str).iloc[:, 0]
    return bool(len(first)) and first.tolist() == [str(i) for i in range(len(first))]


TRAIN_ROW_ID = "train-{}"  # the id a train row gets from its row number, when the train file has no id


def numbered(frame: pd.DataFrame, id_column: str) -> pd.DataFrame:
    """``frame`` with an id column first: each row's number, as ``TRAIN_ROW_ID`` writes it (a
    train file without the test file's id, as Rossmann's and the store-item forecasts' are)."""
    return frame.assign(**{id_column: [TRAIN_ROW_ID.format(i) for i in range(len(frame))]})[[id_column, *frame.columns]]
