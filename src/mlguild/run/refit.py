"""Refit mechanics: rerunning a pipeline on every labelled row (train + holdout).

The search needs a holdout the scripts never see; the final submission does not, and a
model that learns from all labelled rows is usually better. A refit reruns a node's script,
unchanged, on a data directory whose training file also holds the holdout rows with their
labels (``build_full_data``); a blend's refit first refits each member it weighted
(``refit_chain``). This module says what a refit needs (its chain, its time, its data) and
how to tell a sound one (``agreement``); the final stage (``mlguild.final.stage``) runs the
refits and chooses the final submission. The search keeps back the time a refit needs
(``mlguild.run.reserve``).

The full-data directory holds sealed labels, so it exists only while refit nodes run, is
forbidden to the guard of every other node, and is deleted afterwards.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import RunError
from ..core.graph import Node, SearchGraph
from ..firewall.confirm import held_answers
from ..firewall.workspace import Workspace
from ..rundir.folder import RunDir
from ..scoring.ranked import row_keys
from ..task.spec import HOLDOUT_FILES, TaskSpec
from ..util.exact_csv import append_rows, read_csv_exact, select_rows, write_rows
from ..util.fs import read_no_follow
from ..util.parquet import refresh_parquet
from .samples import rows_scaled_seconds, share_of_rows

# A refit's seconds over its node's seconds in the search, per unit of growth of the training
# file, before any refit of its family was measured: linear in rows. Measured over 104 refits of
# 24 runs (eight examples, 5 and 30 minutes, 2 cores) the median was 0.92 and a run's whole final
# stage took 0.61-1.16 of this (median 0.83): the quarter more once added over-priced every
# short run's reserve (a 5-minute ames run kept back 108 s for a final stage of 72 s).
DEFAULT_SCALE = 1.0
# A refit whose fits stop at their deadline is refitted on every row when estimated at up to
# this many times the time left (``finishing_seconds``): its trees are then cut to about half of
# what the estimate asked for at worst, still fitted on far more rows than the search's.
DEADLINE_SLACK = 2.0
# What a refit of ``node`` needs per second its node ran, per unit of growth (the reserve's
# measured scale of its family, mlguild.run.reserve.RefitScales; None: DEFAULT_SCALE).
ScaleOf = Callable[[Node], float]
_PACED = 0.5  # a script that used this share of its time budget is paced by it


def full_data_dir(run_path: Path) -> Path:
    return run_path / "final" / "data"


def refit_chain(graph: SearchGraph, node: Node, run: RunDir | None = None) -> list[Node]:
    """The nodes whose scripts a refit of ``node`` reruns, members before their blend; with
    ``run``, only the members the blend used (every member, for a blend whose stacker made
    its predictions; the members the selection gave weight to, otherwise)."""
    if not node.is_blend:
        return [node]
    members = [p for p in node.parents if p in graph.nodes]
    used = _blend_members_used(run, node) if run is not None else None
    if used is not None:
        members = [m for m in members if m in used]
    return [graph[m] for m in members] + [node]


def _blend_members_used(run: RunDir, node: Node) -> set[str] | None:
    """The members a blend's predictions read, from its ``fuse_weights.json`` (its
    ``members_used``; in a blend written before stacks, the members weighted above 0);
    None when it wrote no such file."""
    path = run.node_dir(node.id) / "output" / "fuse_weights.json"
    try:
        report = json.loads(read_no_follow(path))
        if isinstance(report.get("members_used"), list):
            return {str(m) for m in report["members_used"]}
        weights = {str(k): float(v) for k, v in report.get("weights", {}).items()}
        return {m for m, w in weights.items() if w > 0} if weights else None
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def sole_member(run: RunDir, node: Node) -> str | None:
    """The one member whose predictions a blend's are, when its selection (``fuse_weights.json``,
    as the recipes' blends write it; not a stacker, which transforms them) gave all its weight
    to that member; None otherwise."""
    if not node.is_blend:
        return None
    try:
        report = json.loads(read_no_follow(run.node_dir(node.id) / "output" / "fuse_weights.json"))
        weighted = [str(m) for m, w in report.get("weights", {}).items() if float(w) > 0]
    except (OSError, ValueError, AttributeError, TypeError):
        return None
    return weighted[0] if report.get("method") == "selection" and len(weighted) == 1 else None


def growth(run: RunDir) -> float:
    """How much larger the training file of the refit is than the search's."""
    split = run.workspace.manifest().get("split", {})
    train, holdout = split.get("train_rows") or 1, split.get("holdout_rows") or 0
    return (train + holdout + (split.get("confirm_rows") or 0)) / train


def sample_growth(node: Node) -> float:
    """How many times more rows the search's training file holds than the row sample ``node``
    trained on (mlguild.run.samples), 1 for a node that read every row: its refit fits on this
    much more than ``growth`` (``rows_scaled_seconds``)."""
    rows, of = node.meta.get("train_rows"), node.meta.get("train_rows_of")
    return float(of) / float(rows) if rows and of else 1.0


def node_refit_seconds(node: Node, grow: float, scale: float = DEFAULT_SCALE, alone: bool = False) -> float:
    """How long the refit of one node is expected to take: its measured fit time on this run,
    times the growth of the training file (``unscaled_refit_seconds``; ``alone``: the refit of
    its script by itself, not as a blend's member), times ``scale`` (what refits of its family
    measured, with a margin: mlguild.run.reserve). A paced script (one that sized its work
    to its time budget) is given more when the time left allows (``refit_budget``), but what
    the search keeps back for it is what it measured (issue 38: a 5-minute run kept back its
    nodes' whole time limits and ended a minute early)."""
    return unscaled_refit_seconds(node, grow, alone) * scale


def one_model(node: Node) -> bool:
    """Whether ``node``'s script, refitted by itself, fits one model on every labelled row
    instead of one per fold (it reads MLGUILD_REFIT, and said how many folds it fitted of how
    many: ``fit_folds``, ``cv_folds``, as the recipes' single-target scripts do)."""
    return not node.is_blend and bool(node.timing.get("fit_folds")) and int(node.timing.get("cv_folds") or 0) >= 2


def unscaled_refit_seconds(node: Node, grow: float, alone: bool = False) -> float:
    """The refit's seconds before its family's scale: the node's seconds with its fitting
    scaled to every labelled row (``rows_scaled_seconds``: from its row sample to the search's
    training file, then by ``grow``), the rest of its seconds (starting, reading, predicting the
    test rows) kept whole. (Scaling those too, a 5-minute run on 7,000 rows kept back 36 s for a
    final stage that took 17 s: most of a small script's seconds are not its fitting.) Any other
    script that says nothing of its fitting grows whole. A script refitted ``alone`` that fits ``one_model``: its fitting is one fold's
    (of ``fit_folds``), scaled from that fold's (K - 1) / K share of the rows to all of them
    (the rest of its seconds, reading and predicting, kept whole). On ten million rows a
    3-fold LightGBM's refit is then one model on 8 million rows, half the fitting and a third
    of the predicting of three models on 5.3 million each. A blend that says nothing of its
    fitting reruns in about its search seconds: it fits a few weights or a small stacker on
    stored predictions, of which only the out-of-fold part grows (28 blend refits of 24 runs
    took 0.76-1.44 of their search seconds, median 0.96; grown whole, a 5-minute run priced them
    at the growth of its training file, about 1.67 times that)."""
    if node.is_blend and node.timing.get("fit_s") is None:
        return float(node.timing.get("exec_s") or 0.0)
    if not (alone and one_model(node)):
        return rows_scaled_seconds(node, sample_growth(node) * grow)
    exec_s, fit_s = float(node.timing.get("exec_s") or 0.0), float(node.timing.get("fit_s") or 0.0)
    folds, cv = int(node.timing["fit_folds"]), int(node.timing["cv_folds"])
    return exec_s - fit_s + fit_s / folds * cv / (cv - 1) * sample_growth(node) * grow


def expected_refit_seconds(grow: float, exec_s: float, scale: float = DEFAULT_SCALE) -> float:
    """The refit of a script that takes ``exec_s`` on the search's rows."""
    return grow * exec_s * scale


def _scale(scale_of: ScaleOf | None, node: Node) -> float:
    return DEFAULT_SCALE if scale_of is None else scale_of(node)


def is_paced(node: Node) -> bool:
    budget_s = node.timing.get("budget_s", 0.0)
    return bool(budget_s) and node.timing.get("exec_s", 0.0) >= _PACED * budget_s


def refit_budget(node: Node, grow: float, left_s: float) -> float:
    """The time limit of ``node``'s refit with ``left_s`` seconds left: a paced script gets as
    much budget per row as the search gave it (on its row sample's rows), when that fits (or it would train less than the
    node it replaces); any other script all that is left (it stops when it is done)."""
    return min(left_s, grow * sample_growth(node) * node.timing["budget_s"]) if is_paced(node) else left_s


# A refit's folds may use at most this share of its time limit: the rest predicts and writes.
FOLD_SHARE_MAX = 0.9
# The share the recipes' folds use by themselves (docs/guides/script-contract.md: folds stop at half the time).
FOLD_SHARE_OWN = 0.5


# The margin each refit after one in its chain keeps beside its estimate (``after_folds_seconds``):
# the harness's seconds per node and this share of the estimate (its spread), at least LATER_MIN_S.
LATER_SPREAD = 0.1
LATER_MIN_S = 1.0
# What a script spends besides fitting when its search node did not say (no ``fit_s``).
UNKNOWN_OWN_S = 5.0


def after_folds_seconds(
    node: Node, after: Sequence[Node], grow: float, scale_of: ScaleOf, alone: bool, harness_s: float
) -> float:
    """The seconds a refit of ``node`` must leave when its folds stop (``fold_share``): what its
    script spends besides fitting, as its search node measured it (its seconds less its fitting
    ones: predicting and writing come after the folds), and each refit after it in its chain
    (``after``): its estimate and a margin, ``harness_s`` (the harness's seconds per node) and a
    tenth of the estimate, at least a second. A flat 5 s per later refit kept a 5-minute churn
    run's first member at its script's own half (its chain's five later refits took 2-3 s each):
    it fitted 4 of 5 folds and the run used 92% of its time; with no margin, a ridership run's
    members used their whole estimates and left the blend's 2-s rerun 1.7 s."""
    timing = node.timing
    own = max(0.0, (timing.get("exec_s") or 0.0) - timing["fit_s"]) if "fit_s" in timing else UNKNOWN_OWN_S
    later = [node_refit_seconds(n, grow, scale_of(n), alone) for n in after]
    return own + sum(s + max(LATER_MIN_S, harness_s + LATER_SPREAD * s) for s in later)


def fold_share(left_s: float, rest_s: float, limit_s: float) -> float | None:
    """The share of its time limit ``limit_s`` a refit's folds may use (``MLGUILD_FOLD_SHARE``),
    with ``left_s`` seconds of the final stage left and ``rest_s`` estimated for the refits after
    it in its chain: until those must start, at most ``FOLD_SHARE_MAX``; None where that is no
    more than a script's own half. Given all the time left as its limit, a script's folds stopped
    at half of it: a 5-minute digits run's LightGBM refit fitted 3 of its 5 folds, and the run
    ended 25 s early."""
    if limit_s <= 0:
        return None
    share = min(FOLD_SHARE_MAX, (left_s - rest_s) / limit_s)
    return round(share, 3) if share > FOLD_SHARE_OWN else None


def deadline_bound(node: Node) -> bool:
    """Whether ``node``'s script, refitted by itself, is one model whose fits grow no tree past
    their deadline (``fits_by_deadline``, as the recipes' boosting scripts say): it finishes in
    its time limit on more rows than that time would grow every tree for."""
    return one_model(node) and bool(node.timing.get("fits_by_deadline"))


def finishing_seconds(run: RunDir, graph: SearchGraph, node: Node, scale_of: ScaleOf | None = None) -> float:
    """The fewest seconds in which the refit of ``node`` on every labelled row finishes: its
    estimate (``refit_seconds``), or for a script refitted by itself whose fits stop at their
    deadline (``deadline_bound``), that estimate over ``DEADLINE_SLACK``, and no less than twice
    its seconds besides fitting (fitting then gets the rest: a model cut to a few trees would
    be no final one). The final stage decides by it whether a refit on every row fits."""
    needed = refit_seconds(run, graph, node, scale_of)
    if not deadline_bound(node):
        return needed
    besides = float(node.timing.get("exec_s") or 0.0) - float(node.timing.get("fit_s") or 0.0)
    return min(needed, max(needed / DEADLINE_SLACK, 2 * besides))


def refit_seconds(run: RunDir, graph: SearchGraph, node: Node | None, scale_of: ScaleOf | None = None) -> float:
    """Time the refit of ``node`` needs, or 0 when refits are off: the sum over its chain
    (a blend's or a stack's members, then itself), each node at its family's scale."""
    if node is None or not run.config.final.refit:
        return 0.0
    grow, chain = growth(run), refit_chain(graph, node, run)
    return sum(node_refit_seconds(n, grow, _scale(scale_of, n), alone=len(chain) == 1) for n in chain)


def best_blend(graph: SearchGraph) -> Node | None:
    return next((n for n in graph.ranked() if n.is_blend), None)


def planned_blend_seconds(
    run: RunDir, graph: SearchGraph, members: Iterable[str], scale_of: ScaleOf | None = None
) -> float:
    """Time the refit of a blend of ``members`` would need (a blend the search is about to
    make): every member's refit, and the blend's own rerun (as long as the slowest blend so far)."""
    if not run.config.final.refit:
        return 0.0
    grow = growth(run)
    slowest = max((n for n in graph if n.is_blend), key=lambda n: n.timing.get("exec_s", 0.0), default=None)
    own = 0.0 if slowest is None else node_refit_seconds(slowest, grow, _scale(scale_of, slowest))
    return (
        sum(node_refit_seconds(graph[m], grow, _scale(scale_of, graph[m])) for m in members if m in graph.nodes) + own
    )


def own_refit_limit(
    run: RunDir, graph: SearchGraph, remaining: float, planned: Iterable[str] = (), scale_of: ScaleOf | None = None
) -> float:
    """The longest a script starting now may run and still leave the time its own refit
    needs, should it become the best node (for a blend about to be made, after the refits of
    its ``planned`` members): a script that uses its whole limit ``t`` needs about
    ``growth * t * DEFAULT_SCALE`` to refit (its family is not known before its script is
    written), so both must fit in ``remaining``. Without this, a node started near the end
    could become the best and leave its refit no time (issue 25)."""
    if not run.config.final.refit:
        return math.inf
    grow = growth(run)
    members = sum(node_refit_seconds(graph[m], grow, _scale(scale_of, graph[m])) for m in planned if m in graph.nodes)
    return (remaining - members) / (1 + grow * DEFAULT_SCALE)


def build_full_data(run: RunDir, rows: int | None = None) -> Path:
    """A copy of the workspace data whose training file also holds the holdout rows and labels
    (with ``rows``, about that many of them only: see ``write_full_data``)."""
    return write_full_data(run.spec, run.workspace, full_data_dir(run.path), rows)


def write_full_data(spec: TaskSpec, ws: Workspace, dest: Path, rows: int | None = None) -> Path:
    """Write to ``dest`` a copy of ``ws``'s data whose training file also holds the holdout
    rows and their labels, the confirmation split's among them (what a refit trains on, and
    what an export hands over: both come after the confirmation split was scored). With
    ``rows``, for a refit with no time to train on them all, about that many labelled rows
    only: with a ``time_column`` the latest, the earliest dropped (rows, or whole groups by
    their latest time, sharing the time at the cut kept together); otherwise a seeded random
    share of them (whole groups where rows come in groups)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(ws.data_dir, dest)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    source = ws.data_dir / spec.train_file
    columns = list(read_csv_exact(source, nrows=0).columns)
    inputs = read_csv_exact(ws.data_dir / "holdout.csv")
    answers = held_answers(ws.data_dir, ws.holdout_answers, spec.id_column)  # with the confirmation rows'
    # The firewall wrote the holdout inputs and their answers from the same rows in the same
    # order, so they join by position (which also holds where ids repeat).
    if inputs[spec.id_column].tolist() != answers[spec.id_column].tolist():
        raise RunError(
            "the holdout inputs and their sealed answers no longer list the same ids in the same order",
            "the run directory was changed by hand; start a new run",
        )
    labelled = inputs.assign(**{c: answers[c].to_numpy() for c in spec.target_columns})[columns]
    # The training rows are read only for the columns that choose rows, and written a block at
    # a time (ten million rows held whole took gigabytes); the labelled holdout rows follow them.
    chooses = [spec.time_column] if rows and spec.time_column else [spec.group_key or spec.id_column]
    keys = pd.concat([read_csv_exact(source, usecols=chooses), labelled[chooses]], ignore_index=True)
    keep = np.ones(len(keys), dtype=bool)
    if rows and spec.time_column and rows < len(keys):
        when = pd.to_datetime(keys[spec.time_column], format="mixed", utc=True, errors="coerce")
        if not spec.ids_unique:
            ids = pd.concat([read_csv_exact(source, usecols=[spec.id_column]), labelled[[spec.id_column]]])
            when = when.groupby(ids[spec.id_column].to_numpy()).transform("max")
        cut = when.sort_values(ascending=False, na_position="last").iloc[rows - 1]
        keep = (when >= cut).to_numpy()
    elif rows and rows < len(keys):
        keep = share_of_rows(keys[chooses[0]], rows)
    target = dest / spec.train_file
    target.unlink()
    n_train = len(keys) - len(labelled)
    write_rows(source, keep[:n_train], target)
    append_rows(select_rows(labelled, keep[n_train:]), target)
    refresh_parquet(target)  # a large table's typed copy holds these rows too
    if spec.file_column is not None:  # the holdout rows' files join the train rows' (neutral names)
        for path in sorted((dest / HOLDOUT_FILES).iterdir()):
            shutil.copyfile(path, dest / str(spec.train_files) / path.name)
    return dest


def agreement(
    kind: str,
    reference: pd.DataFrame,
    refit: pd.DataFrame,
    id_column: str,
    key_columns: Sequence[str] = (),
    group_column: str | None = None,
) -> float:
    """How much two submissions for the same rows agree: Spearman correlation of the values
    (probabilities, regression values, ranking scores; per column, the lowest), the share of
    rows with the same label (labels, cell by cell for several label columns; the most probable
    class for probability matrices), or for ranked lists the mean share of items two lists have
    in common (label sets alike). Where ids repeat (rows align by position), ``key_columns`` are the item columns,
    which are not predictions. Two ranked files (no column but the id and keys) agree as the
    Spearman correlation of their rows' places within their groups (``group_column``, else the id)."""
    if all(c == id_column or c in key_columns for c in reference.columns):
        columns = list(dict.fromkeys([id_column, *key_columns]))
        places = []
        for frame in (reference, refit):
            place = frame.groupby(frame[group_column or id_column].to_numpy(), sort=False).cumcount()
            places.append(pd.Series(place.to_numpy(dtype=float), index=row_keys(frame, columns)))
        return _rank_agreement(places[0], places[1].loc[places[0].index])
    if not reference[id_column].is_unique:  # a ranking's (group, item) rows: both in the sample's order
        a, b = reference.drop(columns=list(key_columns)), refit.drop(columns=list(key_columns))
        a, b = a.set_index(id_column), b.set_index(id_column)
    else:  # key columns beside a row id (its group, its item) are copied, not predicted
        a = reference.drop(columns=list(key_columns)).set_index(id_column)
        b = refit.drop(columns=list(key_columns)).set_index(id_column).loc[a.index]
    if kind in ("ranked_list", "label_set"):
        return _list_overlap(a.iloc[:, 0], b.iloc[:, 0])
    if kind == "label":  # several label columns (multi-label): the share of equal cells
        return float((a.astype(str).to_numpy() == b[a.columns].astype(str).to_numpy()).mean())
    a = a.apply(pd.to_numeric, errors="coerce").astype(float)
    b = b.apply(pd.to_numeric, errors="coerce").astype(float)
    if kind == "class_probabilities":
        return float((a.to_numpy().argmax(axis=1) == b.to_numpy().argmax(axis=1)).mean())
    return min(_rank_agreement(a[c], b[c]) for c in a.columns)


def _rank_agreement(a: pd.Series, b: pd.Series) -> float:
    """Spearman correlation of two prediction columns. A constant column has no rank
    correlation, so it agrees with nothing, except another constant column: two predictors
    that both tie every row (a prior, refitted on more rows) rank the rows the same way."""
    constant_a, constant_b = a.nunique() <= 1, b.nunique() <= 1
    if constant_a or constant_b:
        return 1.0 if constant_a and constant_b else 0.0
    correlation = a.corr(b, method="spearman")
    return 0.0 if math.isnan(correlation) else float(correlation)


def _list_overlap(a: pd.Series, b: pd.Series) -> float:
    """Mean over rows of |A ∩ B| / max(|A|, |B|) for two columns of space-separated lists."""
    shares = []
    for x, y in zip(a.astype(str), b.astype(str), strict=True):
        left, right = set(x.split()), set(y.split())
        shares.append(len(left & right) / max(len(left), len(right)) if left or right else 1.0)
    return float(sum(shares) / len(shares)) if shares else 0.0
