"""The MLE-bench gauntlet: does inference read each MLE-bench competition's public folder as the
task its grader scores, or refuse in one line?

``gauntlet_mlebench.yaml`` holds, per competition of openai/mle-bench, a tiny synthetic public
folder (the real file names, headers, id conventions and value kinds; made-up values) and the
task its ``grade.py`` computes. Each folder is written as ``<id>/prepared/public/`` with
``description.md`` (the opening of its evaluation section) and no task.yaml, then read by
``mlguild.sources.infer.infer_task``, as ``mlguild run FOLDER`` reads it. The verdict:

* ``right``: the targets, the id and key columns, the shape and the metric all match;
* ``refused``: a ``TaskError``, one line naming what is missing;
* ``wrong``: a task stated with confidence that differs from the grader's.

Commands (mlguild's venv)::

    .venv/bin/python benchmarks/gauntlet_mlebench.py            # the table, and the counts
    .venv/bin/python benchmarks/gauntlet_mlebench.py --docs     # rewrite docs/guides/mlebench-gauntlet.md
    .venv/bin/python benchmarks/gauntlet_mlebench.py --descriptions mle-bench/mlebench/competitions
        # each competition's whole description.md from a checkout of openai/mle-bench instead

``tests/sources/test_gauntlet_mlebench.py`` runs the same and asserts that none is wrong.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from mlguild.core.errors import TaskError
from mlguild.metrics import METRICS, get_metric
from mlguild.sources.infer import infer_task
from mlguild.task.spec import TaskSpec

HERE = Path(__file__).resolve().parent
SPECS = HERE / "gauntlet_mlebench.yaml"
DOCS = HERE.parent / "docs" / "guides" / "mlebench-gauntlet.md"
_ROWS = {"train": 40}  # rows of a file whose name says train; every other file has 20
_OFFSET = {"train": 0, "test": 5000}  # id ranges per file, so train and test ids never meet


def load_specs(path: Path = SPECS) -> dict[str, dict]:
    specs = yaml.safe_load(path.read_text())
    for name, spec in specs.items():
        metric = spec["expect"]["metric"]
        if metric != "unregistered" and metric not in METRICS:
            raise ValueError(f"{name}: expected metric {metric!r} is not in mlguild.metrics (write unregistered)")
    return specs


def _value(kind: str, i: int, rows: int, offset: int, rng: random.Random) -> str:
    name, _, arg = kind.partition(":")
    if name == "id":
        return (arg or "{}").format(offset + i)
    if name == "grp":
        count, _, fmt = arg.partition(":")
        return (fmt or "{}").format(offset + i * int(count) // rows)
    if name == "int":
        lo, hi = arg.split(":")
        return str(rng.randint(int(lo), int(hi)))
    if name == "float":
        lo, hi = (float(x) for x in arg.split(":"))
        return f"{rng.uniform(lo, hi):.4f}"
    if name == "prob":
        return f"{rng.random():.4f}"
    if name == "cat":
        options = arg.split("|")
        return options[i % len(options)] if i < len(options) else rng.choice(options)
    if name == "list":
        options = arg.split("|")
        return " ".join(rng.sample(options, rng.randint(1, min(3, len(options)))))
    if name == "text":
        words = ["the", "model", "reads", "every", "row", "of", "this", "small", "table", "again"]
        return " ".join(rng.choices(words, k=rng.randint(4, 12))).capitalize() + "."
    if name == "date":
        from datetime import date, timedelta

        return (date.fromisoformat(arg) + timedelta(days=offset // 50 + i)).isoformat()
    if name == "hot":
        k, n = (int(x) for x in arg.split(":"))
        return "1" if i % n == k else "0"
    if name == "const":
        return arg
    if name == "bool":
        return str(rng.randint(0, 1))
    if name == "pos":
        return str(i % int(arg))
    if name == "floats":
        return json.dumps([round(rng.uniform(-30, 0), 3) for _ in range(int(arg))])
    if name == "seq":  # a sequence: N characters of the alphabet after it
        length, _, alphabet = arg.partition(":")
        return "".join(rng.choice(alphabet) for _ in range(int(length)))
    raise ValueError(f"unknown value kind {kind!r}")


def _typed(value: str, kind: str | None) -> object:
    """A value as a JSON file holds it: a boolean for kind bool, a number where it reads as one."""
    if kind == "bool":
        return value == "1"
    if kind is not None and kind.startswith("floats:"):
        return json.loads(value)
    for parse in (int, float):
        try:
            return parse(value)
        except ValueError:
            continue
    return value


def write_folder(name: str, spec: dict, root: Path, descriptions: Path | None = None) -> Path:
    """Write ``spec`` as MLE-bench's public files would look; the competition folder's path. The
    description is the opening of its evaluation section, or ``descriptions/<name>/description.md``."""
    import pandas as pd

    rng = random.Random(name)
    public = root / name / "prepared" / "public"
    public.mkdir(parents=True)
    text = f"# {name}\n\n## Evaluation\n\n{spec.get('eval', '')}\n"
    if descriptions is not None:
        text = (descriptions / name / "description.md").read_text(encoding="utf-8")
    (public / "description.md").write_text(text, encoding="utf-8")
    files: dict[str, dict] = spec.get("files") or {}
    train_kinds = next((cols for f, cols in files.items() if "train" in f), {})
    frames: dict[str, pd.DataFrame] = {}
    test_name = next((f for f in files if "test" in f), None)
    for file, columns in sorted(files.items(), key=lambda item: "sample" in item[0] or "Submission" in item[0]):
        role = "train" if "train" in file else "test"
        rows = _ROWS.get(role, 20)
        exploded = {}  # explode:FILE:COLUMN:N: each value of FILE's COLUMN joined by _ with 0..N-1
        for column, kind in columns.items():
            if kind and kind.startswith("explode:"):
                source_file, source_column, n = kind.split(":")[1:]
                exploded[column] = [f"{v}_{k}" for v in frames[source_file][source_column] for k in range(int(n))]
                rows = len(exploded[column])
        offset = _OFFSET[role]
        data: dict[str, list[str]] = {}
        source = frames.get(test_name) if test_name and file != test_name and role == "test" else None
        for column, kind in columns.items():
            if column in exploded:
                data[column] = exploded[column]
                continue
            if source is not None and column in source and kind is None:
                data[column] = source[column].tolist()  # the sample submission lists the test rows
                continue
            if source is not None and kind and kind.startswith("join:"):  # an id made of test columns
                data[column] = ["_".join(row) for row in source[kind.split(":")[1:]].astype(str).to_numpy()]
                continue
            if kind and kind.startswith("join:"):  # an id made of this file's own columns: after them
                data[column] = []
                continue
            kind = kind or train_kinds.get(column) or "text"
            if kind.startswith("of:"):  # a lookup table's key: each value of FILE's COLUMN once, then new ones
                source_file, _, source_column = kind[3:].rpartition(":")
                seen = list(dict.fromkeys(frames[source_file][source_column]))
                data[column] = (seen + [f"{seen[0]}-{i}" for i in range(rows)])[:rows]
                continue
            data[column] = [_value(kind, i, rows, offset, rng) for i in range(rows)]
        for column, kind in columns.items():
            if kind and kind.startswith("join:") and not data[column]:
                data[column] = ["_".join(row) for row in zip(*(data[c] for c in kind.split(":")[1:]), strict=True)]
        frames[file] = pd.DataFrame(data)
        if file.endswith(".json"):  # a JSON array of records, numbers and booleans typed
            records = [
                {c: _typed(v, columns.get(c)) for c, v in row.items()} for row in frames[file].to_dict("records")
            ]
            lines = file in (spec.get("json_lines") or [])  # one record a line (pandas' lines=True)
            text = "".join(json.dumps(r) + "\n" for r in records) if lines else json.dumps(records, indent=4)
            (public / file).write_text(text)
            continue
        sep = "\t" if file.endswith(".tsv") else ","
        frames[file].to_csv(public / file, index=False, sep=sep)
    for csv, column, folder, suffix, *by in spec.get("media") or []:
        for i, value in enumerate(frames[csv][column]):
            shard = int(by[0].split(":")[1]) if by and by[0].startswith("shard:") else 0  # folders of first characters
            where = public / folder / ("/".join(value[:shard]) if shard else frames[csv][by[0]].iloc[i] if by else "")
            where.mkdir(parents=True, exist_ok=True)
            (where / f"{value}{suffix}").write_bytes(b"")
    pattern, _, labels = (spec.get("labelled") or "::").partition("::")
    for n in range(_ROWS["train"] if pattern else 0):  # train files labelled by their folder or name
        label = labels.split("|")[n % len(labels.split("|"))]
        path = public / pattern.format(n=n, label=label, half=n * 2 // _ROWS["train"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    if spec.get("coco"):
        _write_coco(public, spec["coco"], frames)
    if spec.get("arrays"):  # the tables as NumPy arrays
        arrays, test_rows = spec["arrays"], len(next(iter(frames.values())))
        classes = str(arrays["classes"]).split("|")
        for key, rows in (("train", _ROWS["train"]), ("test", test_rows)):
            (public / arrays[key]).parent.mkdir(parents=True, exist_ok=True)
            np.save(public / arrays[key], np.random.default_rng(len(key)).random((rows, arrays["columns"])))
        np.save(public / arrays["labels"], np.array([classes[n % len(classes)] for n in range(_ROWS["train"])]))
    for entry in spec.get("packed") or []:  # FOLDER=ARCHIVE[:nested][:keep], as prepare.py packs a folder
        folder, _, rest = entry.partition("=")
        archive, *flags = rest.split(":")
        files = sorted(p for p in (public / folder).rglob("*") if p.is_file())
        inside = {file: file.relative_to(public if "nested" in flags else public / folder).as_posix() for file in files}
        if archive.endswith(".zip"):  # mlebench.utils.compress: names inside the folder; make_archive: with it
            with zipfile.ZipFile(public / archive, "w") as packed:
                for file, arcname in inside.items():
                    packed.write(file, arcname=arcname)
        elif archive.endswith(".7z"):  # py7zr, as invasive-species-monitoring's prepare.py packs its images
            import py7zr

            with py7zr.SevenZipFile(public / archive, "w") as sevenzip:
                for file, arcname in inside.items():
                    sevenzip.write(file, arcname=arcname)
        else:
            with tarfile.open(public / archive, "w") as tarred:
                for file, arcname in inside.items():
                    tarred.add(file, arcname=arcname)
        if "keep" not in flags:
            shutil.rmtree(public / folder)
    for zipped in spec.get("zipped") or []:  # prepare.py zips it: public holds NAME.zip alone
        with zipfile.ZipFile(public / f"{zipped}.zip", "w") as archive:
            archive.write(public / zipped, arcname=zipped)
        (public / zipped).unlink()
    for packed_table in spec.get("sevenzipped") or []:  # the same in 7z (statoil's prepare.py)
        import py7zr

        with py7zr.SevenZipFile(public / f"{packed_table}.7z", "w") as sevenzip:
            sevenzip.write(public / packed_table, arcname=packed_table)
        (public / packed_table).unlink()
    for other in spec.get("other") or []:
        (public / other).parent.mkdir(parents=True, exist_ok=True)
        (public / other).write_bytes(b"")
    return root / name


def _write_coco(public: Path, coco: dict, frames: dict) -> None:
    """COCO-style metadata as the FGVC competitions ship it: a train listing of images (an id and a
    file_name) with an annotation (image_id, category_id) each, an empty file per train image, and
    a test listing (a dict with images, or a plain list) of the sample submission's ids."""
    categories = [int(c) for c in str(coco["categories"]).split("|")]
    key = coco.get("id_key", "id")
    for listing, written in ((coco["train_json"], True), *((v, False) for v in coco.get("unseen_json", []))):
        images, notes = [], []
        for n in range(_ROWS["train"]):
            cat = categories[n % len(categories)]
            image_id = coco.get("train_id", "{n}").format(n=n if written else n + 900, cat=cat)
            name = coco["train_file"].format(n=n if written else n + 900, cat=cat, id=image_id)
            images.append({key: image_id if "train_id" in coco else int(image_id), "file_name": name})
            notes.append({"id": n, "image_id": images[-1][key], "category_id": cat})
            if written:  # an unseen listing's images are not in the folder (inaturalist's val2019)
                (public / coco["train_base"] / name).parent.mkdir(parents=True, exist_ok=True)
                (public / coco["train_base"] / name).write_bytes(b"")
        (public / listing).parent.mkdir(parents=True, exist_ok=True)
        labelled = {"images": images, "annotations": notes, "categories": [{"id": c} for c in categories], "info": {}}
        (public / listing).write_text(json.dumps(labelled))
    sample = next(f for name, f in frames.items() if "sample" in name.lower() or "Submission" in name)
    tests = []
    for k, image_id in enumerate(sample.iloc[:, 0]):
        name = coco["test_file"].format(id=image_id, n=k)
        tests.append({coco.get("test_id_key", key): image_id, "file_name": name})
        (public / coco["test_base"] / name).parent.mkdir(parents=True, exist_ok=True)
        (public / coco["test_base"] / name).write_bytes(b"")
    listed = tests if coco.get("test_list") else {"images": tests, "info": {}}
    (public / coco["test_json"]).parent.mkdir(parents=True, exist_ok=True)
    (public / coco["test_json"]).write_text(json.dumps(listed))


def shape_of(spec: TaskSpec) -> str:
    if spec.classes is not None:
        return "classes"
    if len(spec.target_columns) > 1:
        return "several"
    if not spec.ids_unique:
        return "grouped"
    if get_metric(spec.metric).prediction == "ranked_list":
        return "list"
    return "single"


@dataclass
class Verdict:
    competition: str
    lite: bool
    expected: str
    inferred: str
    verdict: str  # right, refused, wrong
    why: str = ""
    csv_layout: bool = False  # the public files include train and test rows as CSV files


def describe(targets: list[str], id_column: str, keys: list[str], shape: str, metric: str, params: dict) -> str:
    keyed = f" keys {','.join(keys)}" if keys else ""
    at = "".join(f" {k}={v}" for k, v in params.items())
    return f"{shape} {','.join(targets)} by {id_column}{keyed}; {metric}{at}"


def judge(name: str, spec: dict, root: Path, descriptions: Path | None = None) -> Verdict:
    want = spec["expect"]
    expected = describe(
        want["targets"], want["id"], want.get("keys", []), want["shape"], want["metric"], want.get("params", {})
    )
    folder = write_folder(name, spec, root, descriptions)
    lite = bool(spec.get("lite"))
    csvs = [f for f in spec.get("files") or {} if f.endswith(".csv") and "sample" not in f.lower()]
    layout = any("test" in f for f in csvs) and any("test" not in f for f in csvs)
    try:
        got = infer_task(folder).spec
    except TaskError as exc:
        line = str(exc.args[0]).replace(str(folder / "prepared" / "public"), "public").replace(str(folder), name)
        return Verdict(name, lite, expected, f"refused: {line}", "refused", csv_layout=layout)
    inferred = describe(
        got.target_columns, got.id_column, got.key_columns, shape_of(got), got.metric, got.metric_params
    )
    differ = [
        what
        for what, same in (
            ("targets", sorted(got.target_columns) == sorted(want["targets"])),
            ("id", got.id_column == want["id"]),
            ("keys", sorted(got.key_columns) == sorted(want.get("keys", []))),
            ("shape", shape_of(got) == want["shape"]),
            ("metric", got.metric == want["metric"]),
            ("params", all(got.metric_params.get(k) == v for k, v in want.get("params", {}).items())),
        )
        if not same
    ]
    return Verdict(name, lite, expected, inferred, "wrong" if differ else "right", ", ".join(differ), layout)


def run_all(specs: dict[str, dict] | None = None, descriptions: Path | None = None) -> list[Verdict]:
    specs = specs if specs is not None else load_specs()
    with tempfile.TemporaryDirectory(prefix="gauntlet-mlebench-") as tmp:
        ordered = sorted(specs.items(), key=lambda kv: kv[0].lower())
        return [judge(name, spec, Path(tmp), descriptions) for name, spec in ordered]


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    return {v: sum(1 for r in verdicts if r.verdict == v) for v in ("right", "refused", "wrong")}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(verdicts: list[Verdict]) -> str:
    lines = ["| competition | expected (grader) | inferred | verdict |", "|---|---|---|---|"]
    for r in verdicts:
        mark = " (lite)" if r.lite else ""
        verdict = r.verdict + (f": {r.why}" if r.why else "")
        lines.append(f"| {r.competition}{mark} | {_cell(r.expected)} | {_cell(r.inferred)} | {verdict} |")
    return "\n".join(lines)


def summary(verdicts: list[Verdict]) -> str:
    total, lite = counts(verdicts), counts([v for v in verdicts if v.lite])
    registered = [v for v in verdicts if not v.expected.endswith("unregistered")]
    in_reach = [v for v in registered if v.csv_layout]
    return (
        f"{len(verdicts)} competitions: {total['right']} right, {total['refused']} refused, {total['wrong']} wrong "
        f"({total['right'] / len(verdicts):.0%} right). The lite set ({sum(lite.values())}): {lite['right']} right, "
        f"{lite['refused']} refused, {lite['wrong']} wrong. Those whose grader's metric mlguild has: "
        f"{len(registered)}, {counts(registered)['right']} right; of them, those whose public files include a CSV "
        f"of test rows: {len(in_reach)}, {counts(in_reach)['right']} right."
    )


_PAGE = """# MLE-bench gauntlet: inference on every competition's folder

What `mlguild run FOLDER` makes of each MLE-bench competition's public folder when the folder has
no task.yaml. `benchmarks/gauntlet_mlebench.yaml` holds a tiny synthetic copy of each folder
(the file names, CSV headers, id conventions and kinds of values that the competition's
`prepare.py` writes; made-up values) with the task its `grade.py` scores; each is written to a
temporary folder and read by `mlguild.sources.infer`. A verdict is **right** when the targets,
the id and key columns, the shape (single, classes, several, grouped, list) and the metric all
match the grader's, **refused** when inference stops with one line naming what is missing (the
fix is to write task.yaml, see [task folders](task-folders.md)), **wrong** when it states another
task with confidence. `tests/sources/test_gauntlet_mlebench.py` fails on any wrong one.

Regenerate this page with `python benchmarks/gauntlet_mlebench.py --docs` (`--descriptions
mle-bench/mlebench/competitions` reads each competition's whole description.md from a checkout of
openai/mle-bench instead of the opening of its evaluation section; the verdicts are the same).

A folder whose test rows are listed only by the sample submission, each row's image or sound
in a test folder and no CSV of test rows (histopathologic-cancer-detection, dog-breed-
identification, ...), is read as such: the sample's ids name the test files as the train file's ids name the
train files (in one folder, or in folders named by their label), the test table is those ids, and `mlguild run` converts the folder into a task
folder of its own under `$MLGUILD_HOME/tasks/` (see [task folders](task-folders.md)). The same
conversion serves a submission id that is a test column under another name or two joined by
`_`, a sample whose ids are the train file's columns joined by `_` with no CSV of test rows
(nfl-player-contact-detection: the ids are split into those columns as the test table), a
sample submission written with its pandas index or with its prediction first and the
test rows' columns after it (keyed by the one of them that is unique text), and tables that are tab-separated,
zipped, packed alone in 7z (statoil's train.json.7z), JSON arrays of records or JSON lines, and
records of sequences whose targets are lists of one value per position (stanford-covid-vaccine:
one row per position, with the characters around it). A folder with no train table whose train files are labelled
by their folders (plant-seedlings-classification, tensorflow-speech-recognition-challenge) or
by a part of their names (dogs-vs-cats-redux-kernels-edition), or by COCO-style metadata
(herbarium, iwildcam-2020, inaturalist-2019), gets its train table derived from them, as does one
whose tables are NumPy arrays (ml2021spring-hw2); zip, tar and 7z
archives are read as if unpacked (see [task folders](task-folders.md)). Rows whose data is a CSV
of sensor columns each (predict-volcanic-eruptions-ingv-oe) or a NumPy array in folders named
by the id's first character (seti-breakthrough-listen) are array files (see
[images, text and sound](images-text-audio.md)).

Five metrics were registered from these graders' own definitions: the word-level Jaccard score
of an extracted phrase (`jaccard_words`: tweet-sentiment-extraction, chaii), IceCube's mean
angular error of a direction given as azimuth and zenith (`angular_distance`), RSNA's
probabilistic F1 (`pf1`) and lmsys' log loss over 0/1 columns holding one outcome
(`logloss_columns`), and CHAMPS' log of each coupling type's mean absolute error averaged over the
types (`group_log_mae`, the groups' column named by the description's words). A `jaccard_words` target is free text: any text is a valid prediction, an
empty one included; where the train file has several columns the test file lacks, the one
holding words is the target (chaii's `answer_text` beside `answer_start`).

A description's "Mean F1-Score" over sets of labels is the micro F1 of the pooled labels that
MLE-bench's graders compute (`f1_sets`) in MLE-bench's prepared layout, and refused as ambiguous
elsewhere (Kaggle's Mean F1 is the per-row mean, `f1_sets_mean`).

What the refusals are, in the main: the grader's metric is not in `mlguild.metrics` (Dice, IoU,
Levenshtein, Kendall, ...), or the evaluation leaves rows unscored without naming the column that
picks them (ventilator-pressure-prediction: the grader's MAE where `u_out` is 0, which mlguild scores
when told, `--metric "mae where u_out=0"`, see [task folders](task-folders.md)); the
data are JSON documents that are no array of records, NumPy or BSON files; the rows have no id. The text normalization challenges' sample submission copies each
token as its prediction, and most tokens are their own written form: the firewall's verifier
lets a sample column that repeats a public input row for row pass however well it matches the
sealed labels (it reveals nothing the inputs do not), so those runs start; a model that writes
free text is another matter (the recipes treat each written form as a class).

{summary}

{table}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", action="store_true", help=f"rewrite {DOCS.relative_to(HERE.parent)}")
    parser.add_argument(
        "--descriptions", type=Path, help="a folder of <competition>/description.md (mle-bench's mlebench/competitions)"
    )
    args = parser.parse_args(argv)
    verdicts = run_all(descriptions=args.descriptions)
    if args.docs and args.descriptions is None:
        DOCS.write_text(_PAGE.format(summary=summary(verdicts), table=table(verdicts)))
        print(f"wrote {DOCS}")
    else:
        print(table(verdicts))
    print(summary(verdicts))
    return 1 if counts(verdicts)["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
