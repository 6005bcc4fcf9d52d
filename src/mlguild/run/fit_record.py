"""What a script says of its own fitting, for the budget alone (never a score): the seconds it
spent fitting and, where its refit may be one model, its folds (``fit_record``)."""

from __future__ import annotations

import json
from pathlib import Path

from ..util.fs import read_no_follow

FIT_FILE = "mlguild-fit.json"  # in output/model/: what a script that keeps no model says of its fitting


def fit_record(output: Path, exec_s: float) -> dict[str, float]:
    """What a script says of its fitting in its ``output/model/mlguild-model.json`` (as the recipes
    write it), or, keeping no model to predict from, in ``output/model/mlguild-fit.json`` (the
    recipes for several targets): ``fit_s``, the seconds it spent fitting, at most its run time; and when it says
    its refit may be one model on every row (``one_model_refit``: it reads MLGUILD_REFIT), the
    folds it fitted (``fit_folds``) of its cross-validation's (``cv_folds``), and whether its
    fits stop growing trees at a deadline within its time limit (``fits_by_deadline``: a refit on
    more rows than its time allows in full still finishes). Empty when it says nothing. Only the budget reads these (how a script's time grows with its training rows:
    mlguild.run.samples, mlguild.run.refit), never a score."""
    try:
        manifest = output / "model" / "mlguild-model.json"
        said = json.loads(read_no_follow(manifest if manifest.is_file() else output / "model" / FIT_FILE))
        if said.get("fit_s") is None:
            return {}
        record = {"fit_s": round(min(max(float(said["fit_s"]), 0.0), exec_s), 3)}
        if (
            said.get("one_model_refit") is True
            and int(said.get("folds") or 0) >= 1
            and int(said.get("cv_folds") or 0) >= 2
        ):
            record.update(fit_folds=int(said["folds"]), cv_folds=int(said["cv_folds"]))
            if said.get("fits_by_deadline") is True:  # its fits grow no tree past their deadline
                record["fits_by_deadline"] = True
        return record
    except (OSError, ValueError, TypeError, AttributeError):
        return {}
