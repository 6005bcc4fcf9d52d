"""A train table in two files joined by the id: the rows' inputs in one and their labels in the
other (DrivenData's train_values.csv and train_labels.csv). Inference reads them as one table;
the converted task folder holds the inputs' file with the labels joined to it, and not the
labels' file (a file of labels beside the train table would show the holdout rows' labels)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..util.exact_csv import read_csv_exact, write_csv_exact
from . import tables


@dataclass(frozen=True)
class SplitTrain:
    values: Path  # the id and the inputs
    labels: Path  # the id and the sample submission's prediction columns

    def note(self, id_column: str) -> str:
        return (
            f"the train rows' inputs are in {self.values.name} and their labels in {self.labels.name}, joined by "
            f"{id_column!r}: the converted folder's {self.values.name} holds both, and no {self.labels.name}"
        )

    def head(self, id_column: str, rows: int) -> pd.DataFrame:
        """The first ``rows`` rows of the inputs with their labels (the labels' file, a few
        columns, read whole, so that each of them finds its label)."""
        labels = tables.frame(self.labels).drop_duplicates(id_column)
        return tables.frame(self.values, rows).merge(labels, on=id_column, how="inner")


def split_train(candidates: list[Path], id_column: str, predicted: list[str]) -> SplitTrain | None:
    """The two files of ``candidates`` whose names say train when one holds the id and the
    prediction columns alone and the other the id and none of them; None otherwise."""
    named = [p for p in candidates if "train" in p.name.lower() and not tables.other_form(p)]
    if len(named) != 2:
        return None
    headers = {p: tables.header(p) for p in named}
    labels = [p for p in named if sorted(headers[p]) == sorted({id_column, *predicted})]
    values = [p for p in named if id_column in headers[p] and not set(predicted) & set(headers[p])]
    if len(labels) != 1 or len(values) != 1:
        return None
    return SplitTrain(values[0], labels[0])


def join_labels(public: Path, train_file: str, labels_file: str, id_column: str) -> None:
    """Write ``public/train_file`` with the labels of ``public/labels_file`` joined to its rows
    by ``id_column`` (rows without a label left out), and remove the labels' file (a link to
    the user's files is replaced, never written through)."""
    values, labels = read_csv_exact(public / train_file), read_csv_exact(public / labels_file)
    joined = values.merge(labels.drop_duplicates(id_column), on=id_column, how="inner")
    (public / train_file).unlink()
    write_csv_exact(joined, public / train_file)
    (public / labels_file).unlink()
