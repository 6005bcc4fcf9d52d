"""The task brief: ``brief.md`` in the run folder, written before the first node.

Like a program.md: the rules, the metric and how it is computed, notes on the data, and a
numbered menu of promising directions. An LLM writes it when one is configured (from the
description and the data profile); heuristics from the profile write it otherwise, or when the
LLM fails. Every LLM prompt carries it. It is written once: a user who edits it and resumes the
run is heard, because an existing brief is read, never rewritten.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..llm.base import LLM, Message
from ..metrics import get_metric
from ..prompts import prediction_help, render
from ..util.fs import atomic_write
from .folder import TaskSpec
from .lookup import table_lines
from .profile import DataProfile, summary_text
from .time_order import time_lines

BRIEF = "brief.md"
_MAX_CHARS = 8000  # a brief is read by every prompt: an LLM's overlong one is cut
_HIGH_CARDINALITY = 50
_SKEWED = 2.0
_RARE_CLASS = 0.1


def brief_path(run_dir: Path) -> Path:
    return run_dir / BRIEF


def read_brief(run_dir: Path) -> str:
    path = brief_path(run_dir)
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def ensure_brief(
    run_dir: Path, spec: TaskSpec, profile: DataProfile, description: str, llm: LLM | None
) -> tuple[str, str]:
    """The run's brief, written first when missing; (its text, who wrote it: "existing",
    "llm" or "heuristics"). An LLM failure falls back to the heuristic brief, noted in it."""
    existing = read_brief(run_dir)
    if existing.strip():
        return existing, "existing"
    text, author = heuristic_brief(spec, profile), "heuristics"
    if llm is not None:
        try:
            text, author = llm_brief(llm, spec, profile, description), "llm"
        except Exception as exc:  # any failure of the model: the heuristic brief still serves
            text += f"\n(The LLM could not write this brief: {type(exc).__name__}; these are heuristics.)\n"
    text += time_section(spec, run_dir) + tables_section(profile)
    atomic_write(brief_path(run_dir), text)
    return text, author


TIME_HEADING = "## Time order"


def time_section(spec: TaskSpec, run_dir: Path) -> str:
    """The brief's section on time order, from the split the firewall made (the run's
    manifest): the time column and the holdout's span, or the warning for a random holdout
    on time-ordered data. Added by the harness whoever wrote the rest, so that no LLM's
    brief leaves it out; empty when time plays no part."""
    manifest = run_dir / "manifest.json"
    split = json.loads(manifest.read_text()).get("split", {}) if manifest.is_file() else {}
    lines = time_lines(spec.public_dict(), split)
    return f"\n{TIME_HEADING}\n\n" + "\n".join(lines) + "\n" if lines else ""


TABLES_HEADING = "## Lookup tables"


def tables_section(profile: DataProfile) -> str:
    """The brief's section on the task's lookup tables: each one's key, how it joins (one-to-one
    or one-to-many) and how many rows it matches. Added by the harness whoever wrote the rest,
    as the time section is; empty for a task of one table."""
    lines = table_lines(profile.tables)
    return f"\n{TABLES_HEADING}\n\n" + "\n".join(lines) + "\n" if lines else ""


FINDINGS_HEADING = "## Findings of the exploratory node"
_MAX_DIGEST = 2400  # characters of the harness's digest of its output (about 600 tokens)
_MAX_ERROR = 1500  # characters of a failed exploration's error the brief keeps (its end)
_DIGEST_GAP = "…"


def add_findings(run_dir: Path, node_id: str, output: str, failure: str = "", summary: str = "") -> bool:
    """Append the exploratory node's findings to the brief, once; False if already there.

    Every later request carries the brief in its stable prefix, so the findings go in once,
    short: ``summary`` (the model's summary of what the node printed: mlguild.run.findings),
    or when there is none, the harness's ``digest`` of ``output``, the same text however often
    it is made. A failed exploration (a crash, its time limit) still passes on what it printed
    before it stopped, with its error: the next prompts know what was found and why it stopped."""
    text = read_brief(run_dir)
    if FINDINGS_HEADING in text:
        return False
    where = f"nodes/{node_id}/stdout.txt"
    if summary.strip():
        found, by = summary.strip(), f"The model's summary of what it printed (all of it: {where})."
    else:
        found, by = digest(output) or "(it printed nothing)", f"What it printed, compacted (all of it: {where})."
    section = f"{FINDINGS_HEADING} {node_id}\n\n{by}\n\n```\n{found}\n```\n"
    if failure.strip():
        error = failure.strip()[-_MAX_ERROR:]
        section += f"\nThe exploration did not finish; what it printed above is all it found. Its error:\n\n```\n{error}\n```\n"
    atomic_write(brief_path(run_dir), f"{text.rstrip()}\n\n{section}")
    return True


def digest(output: str, limit: int = _MAX_DIGEST) -> str:
    """What an exploration printed, compacted the same way every time (the fallback for the
    model's summary): each line's padding collapsed (printed tables), blank and repeated lines
    dropped, then the first and the last lines within ``limit`` characters (the sizes and types
    come first, an exploration's conclusions last), a gap marked where lines were left out."""
    lines: list[str] = []
    seen: set[str] = set()
    for raw in output.splitlines():
        line = " ".join(raw.split())
        if line and line not in seen:
            seen.add(line)
            lines.append(line[: limit // 4])  # one endless line must not crowd out the rest
    if sum(len(line) + 1 for line in lines) <= limit:
        return "\n".join(lines)
    head: list[str] = []
    tail: list[str] = []
    room = limit - len(_DIGEST_GAP) - 40  # the gap's own line
    front, back = 0, len(lines) - 1
    while front <= back:  # take alternately from each end, the head first
        line = lines[front] if len(head) <= len(tail) else lines[back]
        if len(line) + 1 > room:
            break
        room -= len(line) + 1
        if len(head) <= len(tail):
            head.append(line)
            front += 1
        else:
            tail.append(line)
            back -= 1
    left_out = back - front + 1
    gap = f"{_DIGEST_GAP} ({left_out} line{'s' if left_out != 1 else ''} left out) {_DIGEST_GAP}"
    return "\n".join([*head, gap, *reversed(tail)])


def split_findings(brief: str) -> tuple[str, str]:
    """(the brief without the exploration's findings, the findings section): a prompt puts
    the findings last in its stable prefix, so that the prefix every request sent before
    them stays the start of every request sent after."""
    at = brief.find(FINDINGS_HEADING)
    before, findings = (brief, "") if at < 0 else (brief[:at], brief[at:])
    # Both parts end alike whether the findings are there or not: the text before stays the same.
    return (before.strip() + "\n" if before.strip() else ""), (findings.strip() + "\n" if findings.strip() else "")


def llm_brief(llm: LLM, spec: TaskSpec, profile: DataProfile, description: str) -> str:
    prompt = render(
        "brief",
        description=description[:20000],
        data_summary=summary_text(profile, max_columns=60),
        metric_block=_metric_block(spec),
        rows={"train": profile.n_train, "holdout": profile.n_holdout, "test": profile.n_test},
    )
    reply = llm.complete([Message("user", prompt)], max_tokens=2000, purpose="brief", node="")
    text = reply.text.strip()
    if len(text) < 200 or "1." not in text:
        raise ValueError("the brief is too short or has no numbered directions")
    return text[:_MAX_CHARS] + "\n"


def _metric_block(spec: TaskSpec) -> str:
    metric = get_metric(spec.metric)
    lines = [
        f"- Metric: {spec.metric} ({metric.direction}): {metric.description}.",
        f"- Predictions: {prediction_help(spec.public_dict())}",
        f"- Submission header: {','.join(spec.submission_columns)}",
    ]
    if spec.positive_label is not None:
        lines.append(f"- Positive class: {spec.positive_label!r}")
    if rows := spec.scored_rows:
        where = " and ".join(f"{c} = {v!r}" for c, v in rows.items())
        lines.append(f"- Scored rows: only the rows where {where}; the metric leaves the others out")
    if params := {k: v for k, v in spec.metric_params.items() if k != "scored_rows"}:
        lines.append(f"- Metric parameters: {params}")
    return "\n".join(lines)


def heuristic_brief(spec: TaskSpec, profile: DataProfile) -> str:
    """A brief from the spec and the profile alone (no description reading, no LLM)."""
    rules = [
        f"- Scripts read the data in $MLGUILD_DATA; {spec.train_file} there has {profile.n_train} labelled rows "
        f"(the harness set {profile.n_holdout} more aside as the holdout) and {spec.test_file} has "
        f"{profile.n_test} rows to predict.",
        "- Every score the search uses is the harness's, on the sealed holdout; a printed score is only logged.",
        "- No internet: nothing can be downloaded, pretrained weights included.",
    ]
    notes, menu = _data_notes(spec, profile), _directions(spec, profile)
    sections = [
        [f"# Brief: {spec.name}"],
        ["## Rules", *rules],
        ["## Metric", _metric_block(spec)],
        ["## Data notes", *notes],
        ["## Promising directions", *[f"{i}. {line}" for i, line in enumerate(menu, start=1)]],
    ]
    return "\n\n".join("\n".join(lines) for lines in sections) + "\n"


def _data_notes(spec: TaskSpec, profile: DataProfile) -> list[str]:
    kinds: dict[str, list[str]] = {}
    for column in profile.columns:
        kinds.setdefault(column.kind, []).append(column.name)
    notes = [f"- {len(profile.columns)} input columns: " + ", ".join(f"{k} {len(v)}" for k, v in sorted(kinds.items()))]
    for kind in ("id", "constant", "empty"):
        if kind in kinds:
            notes.append(f"- No signal ({kind}): {', '.join(kinds[kind][:8])}")
    if profile.train_only:
        notes.append(
            f"- Not in {spec.test_file}: {', '.join(profile.train_only[:8])}; a model must not use them as inputs "
            "(the test rows have no value for them)"
        )
    missing = [c for c in profile.columns if c.missing_fraction >= 0.2]
    if missing:
        shown = ", ".join(f"{c.name} ({c.missing_fraction:.0%})" for c in missing[:8])
        notes.append(f"- Often missing: {shown}; missingness itself may be informative")
    wide = [c for c in profile.columns if c.kind == "categorical" and c.n_unique >= _HIGH_CARDINALITY]
    if wide:
        notes.append(f"- High-cardinality categories: {', '.join(f'{c.name} ({c.n_unique})' for c in wide[:8])}")
    target = profile.target
    if "minority_fraction" in target:
        notes.append(
            f"- Target classes: {target.get('n_classes')}; the rarest is {target['minority_fraction']:.1%} of rows"
        )
    if "skew" in target:
        notes.append(
            f"- Target range {target['min']:.4g} to {target['max']:.4g}, mean {target['mean']:.4g}, "
            f"skew {target['skew']:.2f}"
        )
    if profile.n_train < 1000:
        notes.append("- Few rows: holdout scores are noisy; prefer simple, regularised models and cross-validation")
    return notes


def _directions(spec: TaskSpec, profile: DataProfile) -> list[str]:
    kinds = {c.kind for c in profile.columns}
    target = profile.target
    menu = ["Gradient-boosted trees (LightGBM or CatBoost) on all useful columns, with early stopping in K-fold CV"]
    if profile.tables:
        menu.insert(
            0,
            "Join the lookup tables by their keys first: a one-to-one table's columns as they are, a one-to-many "
            "table's rows summarised per key (count, mean/min/max of numbers, distinct values of categories)",
        )
    if "text" in kinds:
        menu.append("TF-IDF of the text columns (word and character n-grams) into a linear model; blend with the trees")
    if any(c.kind == "categorical" and c.n_unique >= _HIGH_CARDINALITY for c in profile.columns):
        menu.append("Out-of-fold target encoding (or CatBoost's ordered statistics) for the high-cardinality columns")
    if kinds & {"datetime", "epoch", "time"}:
        menu.append(
            "Calendar features from the date and time columns (year, month, day of month and of year, weekday, hour, elapsed time)"
        )
    if kinds & {"number_text", "mixed", "boolean", "list"}:
        menu.append("Parse the numbers-as-text, boolean and list columns into numbers before modelling")
    if spec.task_type == "regression" and abs(target.get("skew", 0.0)) >= _SKEWED:
        menu.append("Model a log (or rank) transform of the skewed target and invert it for predictions")
    if spec.metric in ("rmsle",):
        menu.append("Train on log1p(target) with squared error: that is what RMSLE scores")
    if target.get("minority_fraction", 1.0) < _RARE_CLASS:
        menu.append("Class weights or balanced sampling for the rare class; tune the decision threshold for labels")
    menu.append("A regularised linear model on scaled numeric and one-hot categorical features, as a diverse member")
    menu.append("Tune the best model's learning rate, depth and regularisation; then average several seeds")
    menu.append("Blend or stack the best diverse models on out-of-fold predictions")
    return menu
