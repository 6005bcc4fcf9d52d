"""TaskSpec: what a task folder's ``task.yaml`` holds, and the rules for the file names in it."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ..metrics import get_metric, metric_name

TaskType = Literal["binary", "multiclass", "regression", "ranking"]
Modality = Literal["tabular", "text", "image_array", "image_files", "audio_files", "array_files"]

# Files the firewall writes into a run's workspace itself: a task file of the same name
# would be overwritten by them (or overwrite them).
HOLDOUT_INPUTS = "holdout.csv"
HOLDOUT_SAMPLE = "holdout_sample_submission.csv"
HOLDOUT_FILES = "holdout_files"  # the holdout rows' input files, under neutral names
KNOWN_LABELS = "labels.json"
"""Beside a sealed answers file: {target column: every label of the task's training rows}."""
RESERVED_NAMES = (HOLDOUT_INPUTS, HOLDOUT_SAMPLE, "task.json", "description.md", HOLDOUT_FILES)
# Files of a task folder that are never data, even when the data lie beside them (data_dir: .);
# "runs" is where `mlguild run` writes by default when started inside that folder.
NOT_DATA = ("task.yaml", "brief.md", "description.md", "competition.json", "knowledge", "private", "runs")
_FILE_FIELDS = ("train_file", "test_file", "sample_submission", "answers_file")


def plain_relative_name(name: str, folder: str) -> str:
    """``name`` if it is a normalised relative path that stays inside ``folder`` (``train.csv``,
    ``data/train.csv``); ValueError otherwise. The firewall writes files under these names into
    a run, so an absolute path or a ``..`` would make it write over files outside the run."""
    why = None
    if not name or "\0" in name:
        why = "is empty" if not name else "contains a NUL byte"
    elif PurePosixPath(name).is_absolute() or name.startswith("~"):
        why = "is an absolute path"
    elif ".." in PurePosixPath(name).parts:
        why = "climbs out with '..'"
    elif PurePosixPath(name).as_posix() != name:
        why = f"is not a plain path (write it as {PurePosixPath(name).as_posix()!r})"
    if why:
        raise ValueError(f"{short(name)} {why}: name a file inside the task's {folder}/ folder, e.g. 'train.csv'")
    return name


def short(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters with its length, so a hostile name cannot
    flood a terminal or a journal."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(str(value)):,} chars)"


class LookupTable(BaseModel):
    """A table beside train and test that adds columns to their rows through a key (a product's
    attributes, a customer's past orders): ``tables:`` in task.yaml. It holds inputs only."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(description="The table's file in the data folder (CSV).")
    key: list[str] = Field(description="The table's key column(s) (a name, or a list for a key of several columns).")
    train_key: list[str] | None = Field(
        None, description="The train and test columns holding the key, in key's order, when they are named otherwise."
    )

    @field_validator("key", "train_key", mode="before")
    @classmethod
    def _listed(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("file")
    @classmethod
    def _file_inside(cls, value: str) -> str:
        plain_relative_name(value, "public")
        if not value.lower().endswith(".csv"):
            raise ValueError(f"table {short(value)} is not a CSV file: tables are read as CSV (convert it)")
        return value

    @model_validator(mode="after")
    def _keys_match(self) -> LookupTable:
        if not self.key:
            raise ValueError(f"table {short(self.file)} has an empty key: name its key column(s)")
        if self.train_key is not None and len(self.train_key) != len(self.key):
            raise ValueError(
                f"table {short(self.file)}: train_key {self.train_key} must name one column per key column {self.key}"
            )
        return self

    @property
    def join_columns(self) -> list[str]:
        """The train and test columns the key is matched on."""
        return list(self.train_key or self.key)


class TaskSpec(BaseModel):
    """What ``task.yaml`` holds: everything the harness needs to split, score and explain a task."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Short task name, used in run ids.")
    task_type: TaskType = Field(description="binary, multiclass, regression or ranking.")
    modality: Modality = Field(
        "tabular",
        description="What the inputs are: tabular, text, image_array (pixels as columns), image_files (one image file per row), audio_files (one wav or AIFF file per row) or array_files (one NumPy array or CSV of numeric columns per row).",
    )
    metric: str = Field(description="Metric name from the registry (mlguild.metrics).")
    direction: Literal["maximize", "minimize"] | None = Field(
        None, description="Optional; when given it must agree with the metric's own direction."
    )
    metric_params: dict = Field(
        default_factory=dict,
        description="Extra metric arguments, e.g. {k: 5}; scored_rows: {COLUMN: VALUE, ...} scores only the rows "
        "whose input columns hold those values (the rows the grader scores, as ventilator's u_out: 0).",
    )
    id_column: str = Field(description="Column that identifies a row in train, test and submissions.")
    target_columns: list[str] = Field(description="Label columns in the train file.")
    submission_columns: list[str] = Field(description="Exact header of a submission, id column first.")
    ids_unique: bool = Field(True, description="False when keys repeat (ranking): rows align by position.")
    key_columns: list[str] = Field(
        default_factory=list,
        description="Submission columns that name a row within its id's group (the item of a (query, item) row): "
        "copied from the test file, never predictions.",
    )
    group_column: str | None = Field(
        None,
        description="The column whose rows are ranked against each other when the id column names each row "
        "(ids unique): a key column of the submission, and the group of a grouped metric. None: where ids "
        "repeat, the id is the group.",
    )
    ranked_file: bool = Field(
        False,
        description="True when a submission lists each group's rows best first with no score column: the order "
        "of a group's rows in the file is the ranking.",
    )
    positive_label: str | None = Field(None, description="Label of the positive class for binary probability metrics.")
    classes: list[str] | None = Field(
        None, description="Class labels, in submission column order for probability submissions."
    )
    text_columns: list[str] = Field(default_factory=list, description="Free-text input columns.")
    time_column: str | None = Field(
        None,
        description="Column of dates or timestamps that orders the rows in time: the holdout is then the latest "
        "labelled rows and validation folds are ordered by it (inferred when the test rows come after the train rows).",
    )
    train_file: str = Field("train.csv", description="Labelled rows, in public/.")
    test_file: str = Field("test.csv", description="Test inputs, in public/.")
    sample_submission: str = Field(
        "sample_submission.csv", description="Submission template for the test rows, in public/."
    )
    answers_file: str | None = Field("answers.csv", description="Test answers in private/, if known.")
    file_column: str | None = Field(
        None, description="Column of the train and test files naming each row's input file (a file per row)."
    )
    train_files: str | None = Field(None, description="Folder of the train rows' files, in the data folder.")
    test_files: str | None = Field(None, description="Folder of the test rows' files, in the data folder.")
    file_suffix: str = Field("", description="Appended to a file_column value to make the file name, e.g. '.tif'.")
    data_dir: str = Field(
        "public", description="Folder of the public files, inside the task folder ('.' for a Kaggle download)."
    )
    tables: list[LookupTable] = Field(
        default_factory=list,
        description="Lookup tables beside train and test, each joined to their rows by a key: "
        "[{file: planes.csv, key: tailnum}, {file: airports.csv, key: faa, train_key: dest}].",
    )
    description: str | None = Field(None, description="The task's text, when the folder has no description.md.")
    source: str | None = Field(None, description="Where the task came from (example:churn, csv:/path, ...).")

    @field_validator(*_FILE_FIELDS)
    @classmethod
    def _inside_task(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        return plain_relative_name(value, "private" if info.field_name == "answers_file" else "public")

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        return metric_name(value)  # 'auc' is stored as 'roc_auc': every reader sees one name

    @field_validator("train_files", "test_files")
    @classmethod
    def _files_inside(cls, value: str | None) -> str | None:
        return None if value is None else plain_relative_name(value, "data")

    @field_validator("data_dir")
    @classmethod
    def _data_dir_inside(cls, value: str) -> str:
        if value == ".":
            return value
        name = plain_relative_name(value, "task")
        if PurePosixPath(name).parts[0] in NOT_DATA:
            raise ValueError(f"data_dir {short(name)} is not a data folder: use 'public' or '.'")
        return name

    @model_validator(mode="after")
    def _check(self) -> TaskSpec:
        metric = get_metric(self.metric)
        if self.direction is not None and self.direction != metric.direction:
            raise ValueError(
                f"direction {self.direction!r} contradicts metric {self.metric!r}, "
                f"which is {metric.direction}; remove 'direction' from task.yaml"
            )
        if not self.target_columns:
            raise ValueError("target_columns is empty: name the label column(s) of the train file")
        if not self.submission_columns or self.submission_columns[0] != self.id_column:
            raise ValueError(
                f"submission_columns must start with the id column {self.id_column!r}, got {self.submission_columns}"
            )
        if self.id_column in self.target_columns:
            raise ValueError("the id column cannot also be a target column")
        if self.time_column is not None and self.time_column in self.target_columns:
            raise ValueError(f"time_column {self.time_column!r} is a target column: name an input column of dates")
        keys = [c for c in self.key_columns if c not in self.submission_columns[1:] or c in self.target_columns]
        if keys:
            raise ValueError(
                f"key_columns {keys} must be submission columns other than the id and the targets "
                f"(submission_columns: {self.submission_columns})"
            )
        self._check_groups()
        self._check_scored_rows()
        public = {
            "train_file": self.train_file,
            "test_file": self.test_file,
            "sample_submission": self.sample_submission,
        }
        for field, name in public.items():
            if name in RESERVED_NAMES:
                raise ValueError(
                    f"{field} {short(name)} is a name the harness writes into the workspace itself "
                    f"({', '.join(RESERVED_NAMES)}); rename the file"
                )
        if self.file_column is not None and (self.train_files is None or self.test_files is None):
            raise ValueError("file_column needs train_files and test_files: the folders the rows' files are in")
        if self.file_column is None and self.modality in ("image_files", "audio_files", "array_files"):
            raise ValueError(f"modality {self.modality} needs file_column, train_files and test_files")
        if "/" in self.file_suffix or ".." in self.file_suffix:
            raise ValueError(f"file_suffix {short(self.file_suffix)} must be a plain ending such as '.jpg'")
        for table in self.tables:
            if table.file in public.values() or table.file in RESERVED_NAMES:
                raise ValueError(
                    f"table {short(table.file)} is the task's own file or a reserved name: name another file"
                )
            if set(table.join_columns) & set(self.target_columns):
                raise ValueError(f"table {short(table.file)} is keyed on a target column: a key must be an input")
        if len(set(public.values())) < len(public):
            raise ValueError(
                f"train_file, test_file and sample_submission must be three different files, "
                f"got {', '.join(short(v) for v in public.values())}"
            )
        return self

    def _check_groups(self) -> None:
        """A grouped metric needs its groups, and a ranked file its groups and no score column."""
        metric = get_metric(self.metric)
        grouped = metric.ranks_within_groups
        if metric.strata and not isinstance(self.metric_params.get("group_column"), str):
            raise ValueError(
                f"metric {self.metric} averages over the groups of an input column, but none is named: "
                "set metric_params: {group_column: COLUMN} (a column of the train and test files)"
            )
        if self.group_column is not None:
            if self.group_column not in self.key_columns:
                raise ValueError(
                    f"group_column {self.group_column!r} must be one of key_columns {self.key_columns} "
                    "(the submission copies it from the test file)"
                )
        if grouped and self.group_key is None:
            raise ValueError(
                f"metric {self.metric} scores within groups, but no column names them: set group_column: COLUMN "
                "(ids unique per row), or ids_unique: false (the repeated id is the group)"
            )
        if self.ranked_file:
            extra = self.prediction_columns
            if self.group_key is None or not grouped or get_metric(self.metric).prediction != "value":
                raise ValueError(
                    f"ranked_file: true needs a metric that scores within groups (gauc, ndcg_at_k), got {self.metric}, "
                    "and the groups: group_column, or ids_unique: false"
                )
            if extra:
                raise ValueError(
                    f"ranked_file: true means no score column, but submission_columns has {extra} besides the id "
                    f"and key_columns {self.key_columns}: add them to key_columns, or remove ranked_file"
                )

    def _check_scored_rows(self) -> None:
        """``metric_params.scored_rows`` names input columns and the one value each must hold."""
        wanted = self.metric_params.get("scored_rows")
        if wanted is None:
            return
        if not isinstance(wanted, dict) or not wanted:
            raise ValueError(
                "metric_params.scored_rows must map input columns to the value a scored row holds, "
                "e.g. scored_rows: {u_out: 0}"
            )
        for column, value in wanted.items():
            if not isinstance(column, str) or column in (self.id_column, *self.target_columns):
                raise ValueError(
                    f"metric_params.scored_rows names {column!r}: name an input column, not the id or a target"
                )
            if not isinstance(value, (str, int, float, bool)):
                raise ValueError(
                    f"metric_params.scored_rows gives {column!r} the value {value!r}: give one plain value"
                )

    @property
    def scored_rows(self) -> dict[str, object]:
        """The input columns and values of the rows the metric scores (``metric_params.scored_rows``);
        empty when it scores every row."""
        wanted = self.metric_params.get("scored_rows")
        return dict(wanted) if isinstance(wanted, dict) else {}

    @property
    def metric_input_columns(self) -> list[str]:
        """The input columns the scorer reads beside the labels, sealed with them: the metric's
        groups (``metric_params.group_column``) and the columns that pick the scored rows."""
        group = [self.metric_group_column] if self.metric_group_column else []
        return list(dict.fromkeys([*group, *self.scored_rows]))

    @property
    def group_key(self) -> str | None:
        """The column a grouped metric groups by and the firewall seals whole: ``group_column``, or
        the id where ids repeat; None for a task whose rows stand alone."""
        if self.group_column is not None:
            return self.group_column
        return None if self.ids_unique else self.id_column

    @property
    def metric_group_column(self) -> str | None:
        """The column the metric reads each row's group from (``metric_params.group_column``),
        sealed beside the labels; None when the metric takes none."""
        column = self.metric_params.get("group_column")
        return column if isinstance(column, str) else None

    @property
    def prediction_columns(self) -> list[str]:
        """Submission columns other than the id and the key columns."""
        return [c for c in self.submission_columns[1:] if c not in self.key_columns]

    @property
    def metric_direction(self) -> str:
        return get_metric(self.metric).direction

    def public_dict(self) -> dict:
        """The spec as scripts may see it (no answers location)."""
        data = self.model_dump()
        for private in ("answers_file", "source", "data_dir", "description"):
            # source: a path to the full labelled data, never shown to scripts; the others are
            # where things lie on the user's disk, or already in the workspace's description.md.
            data.pop(private, None)
        data["direction"] = self.metric_direction
        data["prediction_kind"] = get_metric(self.metric).prediction
        return data
