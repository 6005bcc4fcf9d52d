"""Plain LightGBM as a peer of mlguild on rankings, which FLAML and AutoGluon do not serve.

Run with mlguild's own venv (LightGBM is one of its dependencies; no setup needed):

    .venv/bin/python benchmarks/peers/run_lightgbm.py --spec task.json --train train.csv --test test.csv --out sub.csv

What it fits, on all labelled rows, with LightGBM's defaults (nothing tuned, no early stopping):

* a grouped ranking: ``LGBMRanker(objective="lambdarank")`` (what a user of LightGBM tries
  first on a ranking), grouped by the task's group (``group_column`` when each row has its own
  id beside a group column, else the repeating id), relevance the target (a binary label as
  0/1); each test row's score is written beside its id and keys. Under a combined metric
  (``mean(gauc, ndcg@5)``) the one ranker serves both parts, as its scores are ranked within
  each group by both. A ranked file (``ranked_file``: no score column) gets each group's rows
  written best first by that score, groups in the test file's order;
* a single label scored by MAP@k: ``LGBMClassifier()``; each row's k most probable classes;
* a list-valued target (a list of items per query) has no plain LightGBM baseline (a model
  needs candidates to rank first): the runner exits saying so;
* one target of a task with lookup tables (``tables`` in its spec): ``LGBMClassifier()`` or
  ``LGBMRegressor()`` on the train file alone, as a user who does not join the tables would fit
  it (the AutoML peers read that file alone too); the positive class's probability, the class
  or the value, as the metric asks.

Features: numeric columns as numbers, every other column as a pandas category (LightGBM's
native categorical splits); the id column, the group column and the target are dropped (they
name rows and groups, they describe nothing), item key columns kept.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd


def features(frame: pd.DataFrame, drop: list[str], categories: dict[str, list]) -> pd.DataFrame:
    out = frame.drop(columns=[c for c in drop if c in frame.columns]).copy()
    for c in out.columns:
        numbers = pd.to_numeric(out[c], errors="coerce")
        if c not in categories and numbers.notna().mean() >= 0.99:
            out[c] = numbers
        else:
            out[c] = pd.Categorical(
                out[c].astype(str), categories=categories.setdefault(c, sorted(set(out[c].astype(str))))
            )
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec", type=Path, required=True)
    p.add_argument("--train", type=Path, required=True)
    p.add_argument("--test", type=Path, required=True)
    p.add_argument("--budget", type=float, default=0)  # unused: defaults train in seconds
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--workdir", type=Path)
    p.add_argument("--info", type=Path)
    args = p.parse_args()
    import lightgbm as lgb

    spec = json.loads(args.spec.read_text())
    spec = spec.get("spec", spec)
    idc, target, keys = spec["id_column"], spec["target_columns"][0], list(spec.get("key_columns") or [])
    kind = spec.get("prediction_kind")
    text = {idc: str, target: str, **{k: str for k in keys}}
    train = pd.read_csv(args.train, dtype=text, keep_default_na=False)
    test = pd.read_csv(args.test, dtype={idc: str, **{k: str for k in keys}}, keep_default_na=False)
    start = time.monotonic()
    categories: dict[str, list] = {}
    group = spec.get("group_column") or (None if spec.get("ids_unique", True) else idc)
    X = features(train, [idc, target, *([group] if group else [])], categories)
    X_test = features(test, [idc, target, *([group] if group else [])], categories)
    info = {"version": lgb.__version__, "metric": spec["metric"]}
    if spec["task_type"] == "ranking" and kind != "ranked_list":
        if group is None:
            print("a ranking needs its groups: group_column, or ids that repeat (ids_unique: false)", file=sys.stderr)
            return 3
        order = np.argsort(pd.factorize(train[group])[0], kind="stable")  # a group's rows together
        positive = spec.get("positive_label")
        y = (train[target] == positive).astype(int) if positive else pd.to_numeric(train[target]).round().astype(int)
        sizes = train[group].iloc[order].groupby(train[group].iloc[order], sort=False).size().to_numpy()
        model = lgb.LGBMRanker(objective="lambdarank", n_jobs=args.threads, verbose=-1)
        model.fit(X.iloc[order], y.iloc[order], group=sizes)
        sub = test[list(dict.fromkeys([idc, *keys]))].copy()
        scores = model.predict(X_test)
        info["best_model"] = "LGBMRanker(lambdarank), defaults"
        if spec.get("ranked_file"):  # no score column: the order of a group's rows is the ranking
            sub["_group"] = pd.factorize(test[group])[0]  # groups stay in the test file's order
            sub["_score"] = -scores
            sub = sub.sort_values(["_group", "_score"], kind="stable")
            info["best_model"] += "; each group's rows written best first"
        else:
            score_column = next(c for c in spec["submission_columns"][1:] if c not in keys)
            sub[score_column] = scores
    elif kind == "ranked_list" and spec["task_type"] != "ranking":
        k = int((spec.get("metric_params") or {}).get("k", 5))
        model = lgb.LGBMClassifier(n_jobs=args.threads, verbose=-1).fit(X, train[target])
        proba = model.predict_proba(X_test)
        top = np.argsort(-proba, axis=1, kind="stable")[:, :k]
        sub = pd.DataFrame({idc: test[idc], spec["submission_columns"][1]: [" ".join(r) for r in model.classes_[top]]})
        info["best_model"] = f"LGBMClassifier, defaults; the top {k} classes"
    elif spec["task_type"] != "ranking":
        y = train[target]
        if spec["task_type"] == "regression":
            model = lgb.LGBMRegressor(n_jobs=args.threads, verbose=-1).fit(X, pd.to_numeric(y))
            predicted = model.predict(X_test)
        else:
            model = lgb.LGBMClassifier(n_jobs=args.threads, verbose=-1).fit(X, y)
            if kind == "probability":
                positive = str(spec.get("positive_label") or "1")
                predicted = model.predict_proba(X_test)[:, list(model.classes_).index(positive)]
            else:
                predicted = model.predict(X_test)
        sub = pd.DataFrame({idc: test[idc], spec["submission_columns"][1]: predicted})
        info["best_model"] = f"{type(model).__name__}, defaults, on the train file alone (no table joined)"
    else:
        print("a list-valued target has no plain LightGBM baseline (a model needs candidates to rank)", file=sys.stderr)
        return 3
    info["fit_s"] = round(time.monotonic() - start, 2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    sub[spec["submission_columns"]].to_csv(args.out, index=False)
    if args.info:
        args.info.write_text(json.dumps(info, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
