"""A task spec inferred from a competition folder that has no ``task.yaml``.

The folders users have: MLE-bench's prepared layout (``public/`` and ``private/``, or the
competition folder above ``prepared/``) and a Kaggle download (train, test and sample
submission side by side). The sample submission says the most: its first column is the id, the
rest are what to predict. The train file says which of those are labels, and which labels a
probability column stands for. The description names the metric. What cannot be decided is
asked for (``--target``, ``--metric``), never guessed silently; every decision comes back as a
sentence the CLI shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..core.errors import TaskError
from ..core.suggest import did_you_mean, listing
from ..metrics import METRICS, get_metric, metric_name
from ..task.folder import NOT_DATA, TaskSpec
from ..task.time_order import infer_time_column_of_files
from . import tables
from .array_tables import ArrayTables
from .columns import blank_predictions, holds_lists, holds_words, infer_task_type, metric_with_params
from .composite_ids import composite_note, composite_test_rows
from .derived_train import RowFiles, derived_train
from .described_metric import described_task_metric, metric_from_description
from .description import described_positive, description_text, folder_task_name, generated_description, has_description
from .file_columns import FILE_PROBE, file_column, files_note, per_row_tables
from .folder_files import FolderFiles
from .folder_roles import answers_file, find_task_root, pick_file, train_holding_sample
from .labelled_files import DERIVED_TRAIN, LabelledFiles
from .lookup_tables import set_tables_aside, table_specs, unused_note
from .metric_checks import check_scored_rows, mean_f1_of_sets, refuse_target_count, refuse_unregistered
from .position_rows import PositionRows, position_rows
from .sample_test_rows import DERIVED_TEST, listed_note, no_test_rows, sample_lists_test_files
from .shapes import key_shape, sample_is_probability, several_default, several_positive, several_task_type
from .split_train import split_train
from .submission_ids import (
    id_made_of,
    key_after_prediction,
    key_copy_name,
    made_of_note,
    numbered,
    pandas_index,
    prediction_first_note,
    predicts,
    with_id,
)

_SAMPLE_ROWS = 2000  # enough rows of train to tell a task type; the whole file is not needed


@dataclass
class Inferred:
    """Where the task lies and what was decided, with the reason for each decision."""

    root: Path  # the folder task.yaml goes into
    spec: TaskSpec
    notes: list[str] = field(default_factory=list)
    # the test table derived from the sample submission, when the folder has none: such a task
    # is converted into a folder of mlguild's own (sources/sample_test_rows)
    test_rows: pd.DataFrame | None = None
    made_of: tuple[str, ...] = ()  # the test file's columns the submission's id is made of (sources/submission_ids)
    indexed: bool = False  # the sample submission's first column is its pandas index, to drop
    retyped: tuple[str, ...] = ()  # tab-separated or zipped tables, written as CSV files (sources/tables)
    nested: str | None = None  # the label column naming the train files' subfolders, laid flat when converted
    labelled: LabelledFiles | None = None  # no train table: the train files labelled by folder or name
    unpacked: tuple[Path, ...] = ()  # archives holding rows' files: unpacked into the converted folder
    shards: dict[str, int] = field(default_factory=dict)  # {train|test: depth}: files in subfolders by id, laid flat
    arrays: ArrayTables | None = None  # no train table: NumPy arrays of the inputs and labels, written as tables
    sample_columns: tuple[str, ...] = ()  # the sample submission's columns kept, in order, when it repeats inputs
    blank: tuple[str, ...] = ()  # the target's columns the test file holds empty: left out of it
    labels_file: str | None = None  # the train labels' own file, joined to the train file's rows when converted
    numbered: bool = False  # the train file lacks the id: its rows get ids from their numbers when converted
    positions: PositionRows | None = None  # records of sequences with lists of targets: a row per position

    @property
    def converted(self) -> bool:
        """Whether the task needs files of its own: a folder of mlguild's own holds it (sources/convert_folder)."""
        derived = (self.test_rows, self.labelled, self.arrays)
        own = (self.indexed, self.unpacked, self.made_of, self.retyped, self.nested, self.shards, self.sample_columns)
        more = (self.blank, self.labels_file, self.numbered, self.positions)
        return any(part is not None for part in derived) or any(map(bool, (*own, *more)))


def infer_task(
    folder: Path,
    *,
    target: str | None = None,
    metric: str | None = None,
    id_column: str | None = None,
    task_type: str | None = None,
) -> Inferred:
    """Infer the spec of the competition folder ``folder`` (nothing is written)."""
    given_params: dict = {}
    if metric is not None:  # "map@5", "mae where u_out=0": the metric, its k, the rows it scores
        metric, given_params = metric_with_params(metric)
    root, data_dir_name = find_task_root(folder)
    data_dir = root / data_dir_name
    notes: list[str] = []
    csvs = [  # never the task's own files, runs started inside the folder, or hidden ones
        p
        for p in sorted(
            [*(p for pattern in tables.PATTERNS for p in data_dir.rglob(pattern)), *tables.json_tables(data_dir)]
        )
        if p.relative_to(data_dir).parts[0] not in NOT_DATA
        and not any(part.startswith(".") for part in p.relative_to(data_dir).parts)
    ]
    per_row = per_row_tables(csvs, data_dir)
    if per_row:
        csvs = [p for p in csvs if p not in per_row]
        folders = sorted({p.parent.relative_to(data_dir).as_posix() for p in per_row})
        notes.append(f"{len(per_row)} CSV files in {', '.join(folders)}/: each row's own data, not tables")
    # Kaggle's sample_submission.csv (any case: Zindi's SampleSubmission.csv), else DrivenData's submission_format.csv
    sample_path = pick_file(csvs, data_dir, "sample submission", ("sample_submission.csv",), ("sample", "submission"))
    present = RowFiles(FolderFiles.of(data_dir, lambda rel: rel.parts[0] in NOT_DATA))
    rest = [p for p in csvs if p != sample_path]
    sample_header = tables.header(sample_path)
    indexed = pandas_index(sample_path, sample_header)  # a sample written with its pandas index: dropped
    sample_header = sample_header[1:] if indexed else sample_header
    if len(sample_header) < 2:
        raise TaskError(
            f"{sample_path} has a single column {sample_header}: no id and prediction columns",
            "write task.yaml by hand (see docs/guides/task-folders.md)",
        )
    given_id = id_column is not None
    # the sample's id (its first column, unless given): the rows' key, unless the sample repeats
    # the test rows after its prediction (key_after_prediction, below)
    sample_id: str = id_column or sample_header[0]
    id_column = sample_id
    labelled, arrays, split = None, None, None
    try:  # a train file named otherwise (MLE-bench's labels.csv) is the one CSV that does not say test
        train_path = pick_file(
            rest, data_dir, "train file", ("train.csv",), "train", [p for p in rest if "test" not in p.name.lower()]
        )
    except TaskError as refused:  # inputs and labels in two files; the train file that holds the sample's
        # columns; else train files labelled by folders or names
        split = split_train(rest, sample_id, sample_header[1:])
        holding = None if split is not None else train_holding_sample(rest, sample_id, sample_header[1:])
        if holding is not None:
            train_path = holding
            notes.append(
                f"train file {holding.name}: of the files named so, the one holding {sample_path.name}'s columns"
            )
        elif split is not None:
            train_path, rest = split.values, [p for p in rest if p != split.labels]
            notes.append(split.note(sample_id))
        else:
            labelled, arrays, how = derived_train(present, data_dir, sample_path, sample_header, sample_id, refused)
            train_path = data_dir / DERIVED_TRAIN
            notes.append(how)
    if labelled is not None:
        train = labelled.table
    elif arrays is not None:
        train = arrays.head(data_dir, id_column, sample_header[-1], _SAMPLE_ROWS)
    elif split is not None:
        train = split.head(id_column, _SAMPLE_ROWS)
    else:
        train = tables.frame(train_path, _SAMPLE_ROWS) if train_path.stat().st_size else pd.DataFrame()
    train_header = list(train.columns) if labelled or arrays or split else tables.header(train_path)
    # tables joining train by a key (articles.csv beside transactions) are inputs, not the test file
    others, lookup_paths = set_tables_aside([p for p in rest if p != train_path], data_dir, train_path)
    listed = None  # the test rows, when the sample submission alone lists them (by their files or ids' parts)
    composite = None if labelled or arrays else composite_test_rows(others, sample_path, indexed, train, sample_id)
    if labelled is not None or arrays is not None:
        listed = tables.frame(sample_path).iloc[:, int(indexed) :][[id_column]]
    elif composite is not None:
        listed = composite[0]
        notes.append(composite_note(composite[1], sample_id, sample_path.name, train_path.name, len(listed)))
    elif not any("test" in p.name.lower() for p in others):
        listed = present.first(lambda files: sample_lists_test_files(files, sample_path, train, sample_id))
        if listed is None and not [p for p in others if "train" not in p.name.lower()]:
            raise no_test_rows(data_dir, sample_path, train_path)  # a file named train is no test file
    # with the tables set aside, the one file left is the test file, whatever its name
    only = others if lookup_paths else None
    test_path = None if listed is not None else pick_file(others, data_dir, "test file", ("test.csv",), "test", only)
    test_name = test_path.name if test_path is not None else f"the test rows of {sample_path.name}"
    test_header = tables.header(test_path) if test_path is not None else list(pd.DataFrame(listed).columns)
    if arrays is not None:  # the test table the arrays make: the ids, then the inputs
        test_header = [c for c in train_header if c != sample_header[-1]]
    sample = tables.frame(sample_path, _SAMPLE_ROWS).iloc[:, int(indexed) :]
    test_rows = (
        tables.frame(test_path, _SAMPLE_ROWS) if test_path is not None else pd.DataFrame(listed).head(_SAMPLE_ROWS)
    )
    if blank := tuple(blank_predictions(sample_header[1:], test_rows, train_header) if test_path else ()):
        notes.append(f"{test_name} holds {train_path.name}'s column(s) {list(blank)}, empty: left out of it")
        test_header, test_rows = [c for c in test_header if c not in blank], test_rows.drop(columns=list(blank))
    if numbers := id_column in test_header and id_column not in train_header and not (labelled or arrays):
        train, train_header = numbered(train, id_column), [id_column, *train_header]
        notes.append(f"{train_path.name} has no column {id_column!r}: its rows get ids from their row numbers")
    positions = None
    if id_column not in test_header and listed is None:  # a row per position of each test record's sequence
        positions = position_rows(train, test_rows, sample[id_column], id_column, sample_header[1:])
    if positions is not None:
        train, test_rows = positions.train_rows(train), positions.test_rows(test_rows, sample[id_column], part=True)
        train_header, test_header = list(train.columns), list(test_rows.columns)
        notes.append(positions.note(sample_path.name, train_path.name))
    sample_columns: tuple[str, ...] = ()
    key = None if id_column in test_header or given_id else key_after_prediction(sample, test_rows, train_header)
    if key is not None:  # the prediction first, the test rows' own columns after it
        notes.append(prediction_first_note(sample_path.name, test_name, id_column, key, train_header))
        sample_columns = (key, id_column)
        id_column, sample, sample_header = key, sample[list(sample_columns)], list(sample_columns)
    made_of = () if id_column in test_header else id_made_of(sample, test_rows, train_header, id_column)
    if made_of:  # the files get the id column in the converted task folder
        train, test_rows = with_id(train, id_column, made_of), with_id(test_rows, id_column, made_of)
        train_header, test_header = list(train.columns), list(test_rows.columns)
        notes.append(made_of_note(made_of, id_column, sample_path.name, test_name, train_path.name))
    if id_column not in test_header:
        raise TaskError(
            f"the sample submission's first column {id_column!r} is not a column of {test_name}",
            "write task.yaml by hand, naming id_column (see docs/guides/task-folders.md)",
        )
    predicted = [c for c in sample_header if c != id_column]
    notes.append(f"id column {id_column!r} and prediction columns {predicted[:6]} from {sample_path.name}'s header")
    if indexed:
        notes.append(f"{sample_path.name}'s unnamed first column numbers its rows (pandas' index): left out")
    if listed is not None and composite is None:
        notes.append(listed_note(len(listed), sample_path.name))
    only_in_train = [c for c in train_header if c not in test_header and c != id_column]

    # tab-separated or zipped tables: converted into CSV files in a task folder of mlguild's own
    retyped = tuple(
        p.relative_to(data_dir).as_posix() for p in (sample_path, train_path, test_path) if p and tables.other_form(p)
    )
    description = description_text(root, data_dir)
    named = metric_from_description(description)
    # MLE-bench's layout names its graders, which settle a description's ambiguous Mean F1
    mlebench = data_dir_name == "public"
    ambiguous = (
        refuse_unregistered(description, named[1] if named else None, folder, mlebench) if metric is None else None
    )
    wanted = metric_name(metric, "--metric") if metric is not None else (named[0] if named else None)
    lists = wanted is not None and get_metric(wanted).prediction == "ranked_list"
    grouped_metric = None if wanted is None else get_metric(wanted).ranks_within_groups
    free_text = wanted is not None and get_metric(wanted).free_text  # any text is a prediction
    shape = key_shape(sample, test_rows, id_column, predicted, grouped_metric, sample_path.name)
    ranking = shape is not None and (shape.group_column is not None or not shape.ids_unique)
    if shape is not None:
        notes.append(shape.words(id_column, sample_path.name))
        predicted = shape.scores

    classes: list[str] | None = None
    if target:
        targets = [t.strip() for t in target.split(",") if t.strip()]  # --target a,b: several targets
        for name in targets:
            if name not in train_header:
                raise TaskError(
                    f"{train_path.name} has no column {name!r}{did_you_mean(name, train_header)}",
                    f"pass --target with one of the columns {test_name} lacks: {listing(only_in_train)}",
                )
    elif predicted and all(c in train_header for c in predicted):
        targets = predicted
        notes.append(f"target(s) {targets[:6]}: the prediction columns, found in {train_path.name}")
    elif len(only_in_train) == 1:
        targets = only_in_train
        notes.append(f"target {targets[0]!r}: the one column of {train_path.name} that {test_name} lacks")
    elif free_text and len(phrases := [c for c in only_in_train if holds_words(train[c])]) == 1:
        targets = phrases  # chaii: answer_text beside answer_start; a free-text metric scores words
        notes.append(
            f"target {targets[0]!r}: of the columns {test_name} lacks ({only_in_train[:6]}), the one holding "
            f"words, which the metric {wanted} scores"
        )
    else:
        raise TaskError(
            f"cannot tell the target: the sample submission predicts {predicted[:6]}, and "
            f"{train_path.name} has {len(only_in_train)} columns that {test_name} lacks ({only_in_train[:6]})",
            f"name it: mlguild run {folder} --target COLUMN",
        )
    if shape is not None and shape.ranked_file:
        notes.append(f"the file's order within each group ranks by {targets[0]!r}, best first")
    elif len(targets) == 1 and targets[0] not in predicted and (shape or lists or free_text) and len(predicted) == 1:
        # One prediction column scores the one target, whatever it is called (as the scorer does).
        notes.append(f"{predicted[0]!r} holds the predictions for the target {targets[0]!r}")
    elif len(targets) == 1 and targets[0] not in predicted:
        labels = sorted(set(train[targets[0]]) - {""}) if targets[0] in train else []
        if labels and set(labels) <= set(predicted):
            classes = predicted  # one probability column per class, in the submission's order
            notes.append(f"one probability column per class of {targets[0]!r} ({len(classes)} classes)")
        elif len(predicted) == 1 and target is None and predicts(sample[predicted[0]], train[targets[0]]):
            notes.append(f"{predicted[0]!r} holds the predictions for the target {targets[0]!r} (values of its kind)")
        else:
            raise TaskError(
                f"the sample submission's columns {predicted[:6]} are neither the target {targets[0]!r} "
                f"nor its classes ({labels[:6]})",
                "write task.yaml by hand (see docs/guides/task-folders.md)",
            )

    if task_type is None and ranking:
        task_type = "ranking"
        notes.append("task type ranking (a score per group and item)")
    elif task_type is None and lists and holds_lists(train[targets[0]]):
        task_type = "ranking"
        notes.append(f"task type ranking: {targets[0]!r} holds space-separated lists of items")
    if task_type is None:
        if classes is not None:
            task_type = "multiclass"  # probability columns per class, however many
        elif len(targets) > 1:
            task_type = several_task_type(train, targets)
        elif wanted is not None and get_metric(wanted).prediction == "label" and _labels(train[targets[0]]) > 2:
            task_type = "multiclass"  # however many classes, and numbers too: the metric scores labels
        else:
            task_type = infer_task_type(train[targets[0]])
        notes.append(f"task type {task_type}")
    probabilities = classes is None and len(targets) == 1 and sample_is_probability(sample, targets[0])

    if ambiguous is not None:
        metric = mean_f1_of_sets(train, targets, ambiguous, notes)
    params: dict = dict(given_params)
    if metric is not None:
        metric = metric_name(metric, "--metric")
    check_scored_rows(params, train_header, test_header, f"{train_path.name} or {test_name}")
    if metric is None and named is None and len(targets) > 1:
        metric = several_default(task_type, sample, targets)
        notes.append(
            f"metric {metric}: the description names none, and it is the usual column-wise metric for "
            f"{len(targets)} {task_type} target columns (pass --metric to choose another)"
        )
    if metric is None:
        if named is None:
            raise TaskError(
                "the description names no metric mlguild knows",
                f"pass one: mlguild run {folder} --metric NAME (known: {', '.join(sorted(METRICS))})",
            )
        inputs = [c for c in train_header if c in test_header]
        metric, params, said = described_task_metric(named, train, targets, classes is not None, inputs, folder)
        notes.append(f"metric {metric}: {said}")
    refuse_target_count(metric, targets, folder)
    kind = get_metric(metric).prediction
    if kind == "label_set" and task_type != "multiclass":  # a set of classes a row, however many
        task_type = "multiclass"
        notes.append(f"task type multiclass: {targets[0]!r} holds a set of labels a row")
    if kind == "class_probabilities" and classes is None:
        raise TaskError(
            f"metric {metric} scores one probability column per class, but the sample submission has "
            f"the column(s) {predicted[:6]}",
            f"pass the metric: mlguild run {folder} --metric NAME",
        )
    if kind == "label" and probabilities:
        notes.append(f"note: the sample submission holds probabilities, but {metric} scores labels")

    files: dict | None = (
        labelled.file_spec(id_column)
        if labelled is not None
        else None
        if positions is not None  # a record's own file (stanford-covid-vaccine's bpps/<id>.npy) is no position's
        else present.first(lambda f: file_column(f, train, test_rows.head(FILE_PROBE), [id_column, *test_header]))
    )
    nested = files.pop("train_subfolders", None) if files is not None else None  # laid flat when converted
    shards: dict[str, int] = files.pop("shards", {}) if files is not None else {}  # laid flat when converted too
    if files is not None:
        notes.append(files_note(files))

    positive = None
    if task_type == "binary" and len(targets) > 1:
        positive = several_positive(train, targets, notes)
    elif task_type == "binary" and classes is None and kind in ("probability", "label"):
        positive = described_positive(description, train[targets[0]], notes)
    keys = shape.keys if shape is not None else []
    lookups = table_specs(lookup_paths, train_path, test_path, targets, notes) if test_path else []
    if test_path is None and lookup_paths:  # a table is joined to train and test files, not to a derived table
        names = [p.relative_to(data_dir).as_posix() for p in lookup_paths]
        notes.append(
            f"{names} are keyed by columns of the train rows, but no test file is there to join them to: "
            "not joined (copied into the workspace as they are)"
        )
    notes += unused_note([p for p in others if p != test_path], data_dir)
    answers = answers_file(root, [id_column, *keys, *targets], notes)
    skip = [id_column, *targets]  # tables read otherwise, and a derived test table, have no time order to find
    ordered = infer_time_column_of_files(train_path, test_path, skip) if test_path and not retyped else (None, [])
    time_column, time_notes = ordered
    notes += time_notes
    fields = dict(
        time_column=time_column,
        name=folder_task_name(folder),
        task_type=task_type,
        metric=metric,
        metric_params=params,
        id_column=id_column,
        target_columns=targets,
        submission_columns=sample_header,
        # the copy of a key that is the rows' text (sample_columns) is read as free text
        text_columns=[key_copy_name(id_column, train_header)] if sample_columns else [],
        ids_unique=shape is None or shape.ids_unique,
        key_columns=keys,
        group_column=shape.group_column if shape is not None else None,
        ranked_file=shape is not None and shape.ranked_file,
        positive_label=positive,
        classes=classes,
        train_file=tables.as_csv(train_path.relative_to(data_dir).as_posix()),
        test_file=tables.as_csv(test_path.relative_to(data_dir).as_posix()) if test_path is not None else DERIVED_TEST,
        sample_submission=tables.as_csv(sample_path.relative_to(data_dir).as_posix()),
        answers_file=answers,
        data_dir=data_dir_name,
        **(files or {}),
        tables=lookups,
        description=None if has_description(root, data_dir) else generated_description(folder, targets, metric),
        source=f"folder:{folder.resolve()}",
    )
    try:
        spec = TaskSpec(**fields)
    except ValueError as exc:  # the files disagree with each other: say where, never guess
        first = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
        raise TaskError(
            f"the task read from {folder} does not hold together: {first.removeprefix('Value error, ')}",
            "write task.yaml by hand (see docs/guides/task-folders.md)",
        ) from None
    unpacked = tuple(present.used.archives()) if files is not None else ()  # the rows' files some archives hold
    if unpacked:
        notes.append(f"the rows' files include those of {', '.join(p.name for p in unpacked)}: unpacked when converted")
    if shards:
        notes.append("the rows' files lie in subfolders named by their first characters: laid flat when converted")
    joined = split.labels.relative_to(data_dir).as_posix() if split is not None else None
    own = (listed, made_of, indexed, retyped, nested, labelled, unpacked, shards, arrays, sample_columns, blank)
    return Inferred(root, spec, notes, *own, labels_file=joined, numbered=numbers, positions=positions)


def _labels(target: pd.Series) -> int:
    return int(target[target != ""].nunique())
