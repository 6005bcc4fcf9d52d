"""A task folder from a Kaggle competition: its data downloaded and unpacked beside the
metadata, and task.yaml inferred from them like any competition folder's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..kaggle.api import Competition, connect
from .convert_folder import write_inferred
from .infer import Inferred, infer_task
from .layout import prepare_dest

METADATA = "competition.json"


def build_from_kaggle(
    slug: str, dest: Path, *, target: str | None = None, metric: str | None = None, overwrite: bool = False
) -> Inferred:
    """Download ``slug`` into ``dest`` and write its description, metadata and task.yaml."""
    client = connect()
    comp = client.competition(slug)  # an unknown name fails here, before anything is written
    dest = prepare_dest(dest, overwrite)
    for empty in ("public", "private"):  # prepare_dest makes the MLE-bench folders; a download is flat
        (dest / empty).rmdir()
    try:
        client.download(slug, dest)
        (dest / "description.md").write_text(_description(comp))
        (dest / METADATA).write_text(json.dumps(_metadata(comp), indent=2, default=str))
        inferred = infer_task(dest, target=target, metric=metric)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)  # no half-made task folder (rules not accepted, a kill)
        raise
    inferred.spec = inferred.spec.model_copy(update={"source": f"kaggle:{slug}", "name": slug})
    write_inferred(inferred)
    return inferred


def _metadata(comp: Competition) -> dict:
    return {
        "slug": comp.slug,
        "title": comp.title,
        "category": comp.category,
        "deadline": comp.deadline.isoformat() if comp.deadline else None,
        "evaluation_metric": comp.evaluation_metric,
        "url": comp.url,
        "max_daily_submissions": comp.max_daily_submissions,
    }


def _description(comp: Competition) -> str:
    deadline = comp.deadline.strftime("%Y-%m-%d %H:%M UTC") if comp.deadline else "none given"
    return (
        f"# {comp.title}\n\n{comp.url} ({comp.category}; deadline {deadline})\n\n"
        f"## Evaluation\n\nSubmissions are evaluated on {comp.evaluation_metric}.\n\n"
        f"## Overview\n\n{comp.description}\n"
    )
