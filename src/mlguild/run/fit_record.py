"""What a script says of its own fitting, for the budget alone (never a score): the seconds it
spent fitting and, where its refit may be one model, its folds (``fit_record``)."""

from __future__ import annotations

import json
from pathlib import Path

from ..util.fs import read_no_follow


def fit_record(output: Path, exec_s: float) -> dict[str, float]:
    """What a script says of its fitting in its ``output/model/mlguild-model.json`` (as the recipes
    write it): ``fit_s``, the seconds it spent fitting, at most its run time; and when it says
    its refit may be one model on every row (``one_model_refit``: it reads MLGUILD_REFIT), the
    folds it fitted (``fit_folds``) of its cross-validation's (``cv_folds``), and whether its
    fits stop growing trees at a deadline within its time limit (``fits_by_deadline``: a refit on
    more rows than its time allows in full still finishes). Empty when it says nothing. Only the budget reads these (how a script's time grows with its training rows:
    mlguild.run.samples, mlguild.run.refit), never a score."""
    try:
        said = json.loads(read_no_follow(output / "model" / "mlguild-model.json"))
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
