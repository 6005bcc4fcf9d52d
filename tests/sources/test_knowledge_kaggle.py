"""A Kaggle competition's public notebooks and discussions into a task's knowledge corpus, through
the real `kaggle` client talking to the local server that speaks the API's wire format
(tests/kaggle_server.py): the signals come through (votes, the author's tier and the public
score that only Kaggle's search gives, dates, sources), the cut-off is strict (a notebook run
after it is neither downloaded nor stored, a reply after it is dropped), outputs and images are
stripped, a second ingest adds nothing, and refusals are clear and write nothing."""

from __future__ import annotations

import importlib.util
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from conftest import make_task, mlguild, one_line
from kaggle_server import FakeCompetition, FakeKernel, FakeMessage, FakeTopic, KaggleServer

from mlguild.sources.kaggle_knowledge import author_tier
from mlguild.task.knowledge import list_items

# Not imported here: importing kaggle authenticates at once, against this process's own config.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("kaggle") is None, reason="needs the [kaggle] extra")

SLUG = "spaceship-lite"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "kaggle_kernels"
DEADLINE = datetime(2022, 6, 1, 23, 59)


def _kernels() -> list[FakeKernel]:
    source = {name: (FIXTURES / name).read_text() for name in ("eda-with-plots.ipynb", "lgbm-baseline.py")}
    return [
        FakeKernel(
            "anna/spaceship-eda-with-plots",
            "Spaceship EDA with plots",
            SLUG,
            source["eda-with-plots.ipynb"],
            author="Anna Expert",
            votes=120,
            last_run=datetime(2021, 4, 10, 8, 30),
            tier="EXPERT",
            best_public_score=0.80512,
        ),
        FakeKernel(
            "bob/lgbm-baseline",
            "Simple LightGBM baseline",
            SLUG,
            source["lgbm-baseline.py"],
            kernel_type="script",
            votes=64,
            last_run=datetime(2021, 5, 1),
        ),
        FakeKernel(  # the most voted, but last run after the deadline
            "gm/first-place-solution",
            "1st place solution",
            SLUG,
            (FIXTURES / "first-place-solution.ipynb").read_text(),
            votes=300,
            last_run=datetime(2022, 6, 15),
            tier="GRANDMASTER",
            best_public_score=0.82,
        ),
        FakeKernel(  # listed, then made private: pulling it is refused
            "carol/private-now",
            "Now private",
            SLUG,
            "x = 1\n",
            votes=30,
            last_run=datetime(2021, 5, 5),
            pull_status=403,
        ),
        FakeKernel("dan/r-eda", "An R notebook", SLUG, "{}", language="r", votes=500, last_run=datetime(2021, 1, 1)),
        FakeKernel("eve/other-comp", "Another competition's", "other-comp", "y = 2\n", votes=999),
    ]


def _message(raw: dict) -> FakeMessage:
    replies = [_message(r) for r in raw.pop("replies", [])]
    return FakeMessage(**raw, replies=replies)


def _topics() -> list[FakeTopic]:
    raw = yaml.safe_load((FIXTURES / "discussions.yaml").read_text())
    return [
        FakeTopic(**{**t, "competition": SLUG, "messages": [_message(m) for m in t.get("messages", [])]}) for t in raw
    ]


@pytest.fixture
def kaggle(tmp_path):
    with KaggleServer() as server:
        server.add(FakeCompetition(SLUG, "Spaceship, lite", deadline=DEADLINE))
        for kernel in _kernels():
            server.add_kernel(kernel)
        for topic in _topics():
            server.add_topic(topic)
        config = tmp_path / "kaggle-config"
        config.mkdir()
        env = {
            "MLGUILD_KAGGLE_ENDPOINT": server.url,
            "KAGGLE_USERNAME": "tester",
            "KAGGLE_KEY": "secret-key",
            "KAGGLE_CONFIG_DIR": str(config),
            "KAGGLE_API_TOKEN": "",
            "HOME": str(tmp_path / "home"),
        }
        yield server, env, make_task(tmp_path / "task")  # no competition.json: the deadline comes from Kaggle


def _add(env, task, *args):
    return mlguild("knowledge", "add", *args, "--task", str(task), cwd=task.parent, env=env)


def test_notebooks_and_discussions_come_with_their_signals_before_the_cutoff(kaggle):
    server, env, task = kaggle
    done = _add(env, task, f"kaggle:{SLUG}")
    out = one_line(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cut-off 2022-06-01" in out and "added 3 item(s)" in out
    assert "4 notebook(s) and 2 discussion topic(s) listed" in out  # the R notebook and the other competition's: not
    assert "left out (dated 2022-06-15, after the cut-off): https://www.kaggle.com/code/gm/first-place-solution" in out
    assert "left out (dated 2022-06-20, after the cut-off)" in out and "/discussion/502" in out
    assert "warning: skipped notebook carol/private-now: Kaggle has no public notebook" in out

    (listed,) = server.calls("ListKernels")
    request = listed.json
    assert (request["competition"], request["sortBy"], request["pageSize"], request["language"]) == (
        SLUG,
        "VOTE_COUNT",
        30,
        "python",
    )
    pulled = {(c.json["userName"], c.json["kernelSlug"]) for c in server.calls("GetKernel")}
    assert ("gm", "first-place-solution") not in pulled  # after the cut-off: not even downloaded
    assert ("anna", "spaceship-eda-with-plots") in pulled

    items = {i.source.rsplit("/", 1)[-1]: i for i in list_items(task)}
    assert set(items) == {"spaceship-eda-with-plots", "lgbm-baseline", "501"}
    eda = items["spaceship-eda-with-plots"]
    assert (eda.kind, eda.title, eda.author, eda.author_tier, eda.votes, eda.public_score, eda.date) == (
        "notebook",
        "Spaceship EDA with plots",
        "Anna Expert",
        "expert",
        120,
        0.80512,
        "2021-04-10",
    )
    assert eda.source == "https://www.kaggle.com/code/anna/spaceship-eda-with-plots"
    assert "```python\nimport pandas as pd" in eda.text and "cryo sleep were transported" in eda.text
    for noise in ("!pip", "iVBOR", "data:image", "0.8175", "100%|", "Figure size", "interactive widget"):
        assert noise not in eda.text, noise
    script = items["lgbm-baseline"]
    assert (script.kind, script.author, script.author_tier, script.public_score) == ("script", "bob", "novice", None)
    assert script.text.startswith("```python\n# Simple LightGBM baseline") and "LGBMClassifier" in script.text
    post = items["501"]
    assert (post.kind, post.author, post.author_tier, post.votes, post.date) == (
        "post",
        "Some Expert",
        "unknown",
        41,
        "2021-03-02",
    )
    assert post.source == f"https://www.kaggle.com/competitions/{SLUG}/discussion/501"
    assert "0.72 accuracy" in post.text and "five folds" in post.text and "Cabin side matters & helps." in post.text
    for leaked in ("private leaderboard", "Late Replier", "example.invalid", "track()", "<p>"):
        assert leaked not in post.text, leaked
    assert not any(
        "private leaderboard" in (task / "knowledge" / f).read_text() for f in (task / "knowledge").iterdir()
    )

    again = _add(env, task, f"https://www.kaggle.com/competitions/{SLUG}/code")  # the URL form too
    assert again.returncode == 0, again.stdout + again.stderr
    assert "added 0 item(s)" in one_line(again.stdout) and "3 already there" in one_line(again.stdout)
    assert len(list((task / "knowledge").iterdir())) == 3


def test_limit_and_an_earlier_cutoff(kaggle):
    server, env, task = kaggle
    done = _add(env, task, f"kaggle:{SLUG}", "--limit", "2", "--cutoff", "2021-03-02")
    assert done.returncode == 0, done.stdout + done.stderr
    out = one_line(done.stdout)
    assert "2 notebook(s) and 2 discussion topic(s) listed" in out and "cut-off 2021-03-02" in out
    assert [c.json["pageSize"] for c in server.calls("ListKernels")] == [2]
    assert not server.calls("GetKernel")  # both most voted notebooks ran after 2021-03-02
    (post,) = list_items(task)
    assert "0.72 accuracy" in post.text and "five folds" not in post.text  # the reply of 2021-03-03 is dropped


def test_a_rate_limit_midway_keeps_what_came(kaggle):
    server, env, task = kaggle
    server.kernels["bob/lgbm-baseline"].pull_status = 429
    done = _add(env, task, f"kaggle:{SLUG}")
    assert done.returncode == 0, done.stdout + done.stderr
    out = one_line(done.stdout)
    assert "stopped after 2 of 4 notebooks: Kaggle is rate-limiting" in out and "run this again" in out
    assert [i.title for i in list_items(task)] == ["Spaceship EDA with plots"]
    assert not server.calls("ListCompetitionTopics")  # no more asking once rate-limited


@pytest.mark.parametrize(
    ("case", "said", "fix"),
    [
        ("rate limit", "Kaggle is rate-limiting requests (asked to list the notebooks)", "wait 1 s"),
        ("unknown", "Kaggle has no competition 'no-such-comp'", "check the name"),
        ("no credentials", "no Kaggle credentials found", "kaggle.json"),
    ],
)
def test_refusals_are_clear_and_write_nothing(kaggle, case, said, fix):
    server, env, task = kaggle
    slug = "no-such-comp" if case == "unknown" else SLUG
    if case == "rate limit":
        server.rate_limit_kernel_lists = 1
    if case == "no credentials":
        env = {**env, "KAGGLE_USERNAME": "", "KAGGLE_KEY": ""}
    done = _add(env, task, f"kaggle:{slug}")
    err = one_line(done.stderr)
    assert done.returncode == 2 and said in err and fix in err, done.stdout + done.stderr
    assert not (task / "knowledge").exists()


def test_kaggle_tiers_map_to_knowledge_tiers():
    from kagglesdk.users.types.users_enums import UserAchievementTier

    assert author_tier(UserAchievementTier.GRANDMASTER) == "grandmaster"
    assert author_tier(UserAchievementTier.STAFF) == "unknown"
    assert [author_tier(n) for n in (0, 1, 2, 3, 4, 5, "3")] == [
        "novice",
        "contributor",
        "expert",
        "master",
        "grandmaster",
        "unknown",
        "master",
    ]
    assert author_tier("USER_ACHIEVEMENT_TIER_EXPERT") == author_tier("expert") == "expert"
    assert author_tier(None) == author_tier("ORGANIZATION") == "unknown"
