"""A plain LightGBM default per target column: the peer for tasks with several targets, which
FLAML and AutoGluon do not fit out of the box.

For each target column: LightGBM at its defaults (``LGBMRegressor`` for values,
``LGBMClassifier`` for a binary label column) fitted on ALL labelled rows, text columns as
pandas categories, the id column and every target left out; the submission holds each
column's prediction (a value, P(positive), or the label at probability 0.5). No tuning, no
early stopping, no use of the budget beyond staying inside it: what a data scientist gets
in ten lines. Runs with mlguild's venv (LightGBM is in mlguild's [ml] extra) and imports
nothing from mlguild.

    python benchmarks/peers/run_lightgbm_columns.py --spec task.json --train train.csv \\
        --test test.csv --budget 60 --out submission.csv
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec", type=Path, required=True, help="The task's public spec as JSON (task.json).")
    p.add_argument("--train", type=Path, required=True)
    p.add_argument("--test", type=Path, required=True)
    p.add_argument("--budget", type=float, required=True, help="Seconds (a default fit takes far less).")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--workdir", type=Path, help="Unused (the other runners' argument).")
    p.add_argument("--info", type=Path)
    args = p.parse_args()
    start = time.monotonic()
    spec = json.loads(args.spec.read_text())
    spec = spec.get("spec", spec)
    idc, targets, kind = spec["id_column"], spec["target_columns"], spec["prediction_kind"]
    if kind not in ("value", "probability", "label"):
        raise SystemExit(f"prediction kind {kind!r} is not one column per target")
    train = pd.read_csv(args.train, dtype={idc: str, **{t: str for t in targets}})
    test = pd.read_csv(args.test, dtype={idc: str})
    features = [c for c in train.columns if c not in (idc, *targets) and c in test.columns]
    both = pd.concat([train[features], test[features]], ignore_index=True)
    for c in features:
        if both[c].dtype == object:
            both[c] = both[c].astype("category")
    X, X_test = both.iloc[: len(train)], both.iloc[len(train) :]
    positive = str(spec.get("positive_label") or "1")
    sub = pd.DataFrame({idc: test[idc]})
    warnings.filterwarnings("ignore")
    for t in targets:
        if kind == "value":
            model = lgb.LGBMRegressor(n_jobs=args.threads, verbose=-1, random_state=0)
            model.fit(X, pd.to_numeric(train[t]))
            sub[t] = model.predict(X_test)
            if spec["metric"] in ("rmsle", "mean_columnwise_rmsle"):
                sub[t] = np.clip(sub[t], 0, None)
        else:
            y = (train[t] == positive).astype(int)
            model = lgb.LGBMClassifier(n_jobs=args.threads, verbose=-1, random_state=0)
            model.fit(X, y)
            proba = model.predict_proba(X_test)[:, list(model.classes_).index(1)]
            negative = next(iter(sorted(set(train[t]) - {positive})), "0")
            sub[t] = proba if kind == "probability" else np.where(proba >= 0.5, positive, negative)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    sub[spec["submission_columns"]].to_csv(args.out, index=False)
    if args.info:
        info = {"version": lgb.__version__, "metric": spec["metric"], "best_model": "LightGBM defaults per column"}
        args.info.write_text(json.dumps({**info, "fit_s": round(time.monotonic() - start, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
