"""``mlguild export``: a run's final solution as a folder a person can hand over and rerun.

The folder holds everything the final submission came from, and nothing sealed:

    solution.py              the final node's script (a blend's script blends members/…)
    members/<name>/solution.py   for a blend, each member's script, under the name the blend
                             reads its predictions by (``parents/<name>/`` when it runs)
    model/, members/<name>/model/   fitted model files, when the scripts saved them
                             (``output/model/``: optional in the script contract)
    data/                    the data folder the final scripts were trained on: the run's
                             workspace data, and for a refit its holdout rows with their labels
                             (the user's own labelled rows); never the test answers
    requirements.txt         the packages the scripts import, pinned to the versions that ran them
    export.json              the evidence: run, task, metric, scores, seeds, lineage, why this node
    README.md                what it is and how to rerun it, by hand or with ``mlguild predict``
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.errors import RunError
from ..core.graph import Node
from ..core.vocabulary import Op
from ..firewall.workspace import Workspace
from ..run.refit import write_full_data
from ..task.spec import TaskSpec
from ..util.fs import atomic_write, read_no_follow
from ..view.runs import RunView, load_run
from .requirements import pinned_requirements

EXPORT_FILE = "export.json"
FORMAT = 1


@dataclass(frozen=True)
class Script:
    """One script of an export: where it lies in the folder, the node it came from, its seed."""

    name: str  # "" for the final script; the member name a blend reads it by otherwise
    node: str
    seed: int

    @property
    def folder(self) -> str:
        return "." if not self.name else f"members/{self.name}"


def final_scripts(view: RunView) -> tuple[Script, list[Script], bool]:
    """(the final script, a blend's member scripts, whether they were refitted on every
    labelled row) of a finished run. A RunError when the run has no final choice yet."""
    choice = view.state.final_choice
    if choice is None:
        raise RunError(
            f"run {view.id} has no final submission yet (it is still running, was stopped, or no node scored)",
            f"let it finish, or give it more time: `mlguild resume {view.path} --time 30m`",
        )
    graph, seed = view.state.graph, int((view.config.get("brain") or {}).get("seed", 0))
    chosen = graph[choice["node"]]
    base = graph[choice["base"]]

    def seed_of(node: Node) -> int:
        return int(node.meta.get("seed", seed))  # a rerun ran with its own seed

    members: list[Script] = []
    if base.is_blend:
        # a refitted blend reads its refitted members under their original names
        staged: dict[str, str] = chosen.meta.get("stage") or {p: p for p in base.parents}
        members = [Script(name, node, seed_of(graph[node])) for name, node in staged.items()]
    return Script("", chosen.id, seed_of(base)), members, chosen.op == Op.REFIT


def export_run(run_path: Path, dest: Path, overwrite: bool = False) -> Path:
    """Write the export of the finished run at ``run_path`` to ``dest`` (see the module's
    docstring); returns ``dest``. Refuses a ``dest`` that exists unless ``overwrite``."""
    view = load_run(run_path)
    final, members, refit = final_scripts(view)
    if dest.exists():
        if not overwrite:
            raise RunError(f"{dest} already exists", f"choose another folder, or pass --force to replace {dest}")
        if not (dest / EXPORT_FILE).exists() and any(dest.iterdir()):
            raise RunError(f"{dest} is not an mlguild export; it is left as it is", "choose an empty or new folder")
        shutil.rmtree(dest)
    partial = dest.with_name(f".{dest.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        codes = [_copy_script(view, script, partial) for script in (final, *members)]
        spec = TaskSpec.model_validate(view.spec)
        ws = Workspace(view.path)
        if refit:
            write_full_data(spec, ws, partial / "data")
        else:
            shutil.copytree(ws.data_dir, partial / "data")
            for path in [partial / "data", *(partial / "data").rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)
        atomic_write(partial / "requirements.txt", "\n".join(pinned_requirements(codes)) + "\n")
        evidence = _evidence(view, final, members, refit)
        atomic_write(partial / EXPORT_FILE, json.dumps(evidence, indent=2))
        atomic_write(partial / "README.md", _readme(evidence, spec))
        os.replace(partial, dest)  # the export appears whole, or not at all
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return dest


def _copy_script(view: RunView, script: Script, dest: Path) -> str:
    node_dir = view.node_dir(script.node)
    folder = dest / script.folder
    folder.mkdir(parents=True, exist_ok=True)
    code = read_no_follow(node_dir / "solution.py").decode()
    atomic_write(folder / "solution.py", code)
    model = node_dir / "output" / "model"
    if model.is_dir() and not model.is_symlink():
        shutil.copytree(model, folder / "model", symlinks=False)
    return code


def _evidence(view: RunView, final: Script, members: list[Script], refit: bool) -> dict[str, Any]:
    graph, choice = view.state.graph, view.state.final_choice or {}
    base = graph[choice["base"]]
    config = view.config
    sandbox = config.get("sandbox") or {}

    def entry(script: Script) -> dict[str, Any]:
        node = graph[script.node]
        return {"name": script.name, "node": node.id, "folder": script.folder, "seed": script.seed, "title": node.title}

    lineage = []
    for node_id in _ancestors(view, base.id):
        node = graph[node_id]
        lineage.append(
            {
                "id": node.id,
                "op": node.op,
                "parents": list(node.parents),
                "title": node.title,
                "status": node.status,
                "holdout_score": node.score,
            }
        )
    return {
        "format": FORMAT,
        "exported": datetime.now(UTC).isoformat(timespec="seconds"),
        "run": view.id,
        "task": view.spec["name"],
        "spec": {k: v for k, v in view.spec.items() if k not in ("answers_file", "source", "data_dir", "description")},
        "metric": view.spec["metric"],
        "direction": view.direction,
        "trained_on": "train + holdout (every labelled row)" if refit else "train (the holdout kept out)",
        "final": {**entry(final), "reason": choice.get("reason"), "base": base.id},
        "members": [entry(m) for m in members],
        "scores": {
            "holdout": base.score,
            "constant_floor": view.floor,
            "test": view.final_score(),
        },
        "threads": int(sandbox.get("threads") or os.cpu_count() or 1),
        "timeout_s": float(sandbox.get("script_timeout_s") or 3600),
        "python": sys.version.split()[0],
        "lineage": lineage,
    }


def _ancestors(view: RunView, node_id: str) -> list[str]:
    seen: list[str] = []
    stack = [node_id]
    while stack:
        current = stack.pop()
        if current in seen or current not in view.state.graph.nodes:
            continue
        seen.append(current)
        stack.extend(view.state.graph[current].parents)
    return seen


def _readme(evidence: dict[str, Any], spec: TaskSpec) -> str:
    final, scores = evidence["final"], evidence["scores"]
    holdout = "none" if scores["holdout"] is None else f"{scores['holdout']:.6g}"
    test = "" if scores["test"] is None else f", test {scores['test']:.6g}"
    lines = [
        f"# {evidence['task']}: the final solution of run {evidence['run']}",
        "",
        f"Exported by mlguild on {evidence['exported']}. Metric: {evidence['metric']} ({evidence['direction']}); "
        f"holdout {holdout}{test}.",
        f"Trained on {evidence['trained_on']}. Why this node: {final['reason']}.",
        "",
        "## Predict new rows",
        "",
        "```bash",
        "mlguild predict THIS_FOLDER new_rows.csv --out predictions.csv",
        "```",
        "",
        f"`new_rows.csv` needs the columns of `data/{spec.test_file}` (the id column `{spec.id_column}` and "
        "every input column). In mlguild's sandbox, a script that saved its fitted model (`model/` with "
        "`mlguild-model.json`) applies it to the new rows without fitting; any other is run again on `data/` "
        "with the new rows as its test rows, with the seed it ran with. By hand, a script with a saved model "
        "predicts with `MLGUILD_MODEL_DIR=model MLGUILD_PREDICT_ROWS=new_rows.csv` set and `new_rows.csv` "
        "copied into `data/`; it writes `output/submission.csv` for those rows alone.",
        "",
        "## Rerun by hand",
        "",
    ]
    if evidence["members"]:
        lines += [
            "This is a blend: run each member first, then the blend, which reads each member's `output/` "
            "from `parents/<name>/`:",
            "",
            "```bash",
            "pip install -r requirements.txt",
        ]
        for member in evidence["members"]:
            lines += [
                f"(cd {member['folder']} && MLGUILD_DATA=$PWD/../../data MLGUILD_SEED={member['seed']} python solution.py)",
                f"mkdir -p parents/{member['name']} && cp {member['folder']}/output/*.csv parents/{member['name']}/",
            ]
        lines += [f"MLGUILD_DATA=$PWD/data MLGUILD_SEED={final['seed']} python solution.py", "```"]
    else:
        lines += [
            "```bash",
            "pip install -r requirements.txt",
            f"MLGUILD_DATA=$PWD/data MLGUILD_SEED={final['seed']} python solution.py",
            "```",
        ]
    lines += [
        "",
        "The predictions are in `output/submission.csv`. `export.json` has the evidence: the scores, the seeds, "
        "and the lineage of nodes this solution came from.",
        "",
    ]
    return "\n".join(lines)
