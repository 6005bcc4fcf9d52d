"""A Kaggle competition's community material into a task's knowledge corpus (mlguild.task.knowledge):
its most voted public Python notebooks and scripts, and its most voted discussion topics with
their messages, through the official client (kaggle_api).

What the API gives, and so what an item says: the kernels list gives a notebook's title,
author, votes and when its current version last ran, but neither the author's tier nor a score;
Kaggle's search gives both, so each notebook kept is looked up there (best effort: "unknown" and
no score when the search does not find it). The topics list gives a topic's author name, votes
and date, no tier: posts say "unknown".

The cut-off is strict. A notebook is its current version (the API lists no older ones): when
that last ran after the cut-off, the notebook is left out whole, without being downloaded. A
topic posted after it is left out; of one posted before, the messages dated after it are
dropped. ``store_items`` then checks every item's date again and reports what it left out.
"""

from __future__ import annotations

import html
import re
import tempfile
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path

from ..core.errors import KaggleError, TaskError
from ..kaggle.api import KaggleClient, Kernel, RateLimited, Topic, connect
from ..task.knowledge import _MAX_TEXT, TIERS, Ingested, Item, clean_markdown, notebook_text, store_items

DEFAULT_LIMIT = 30
_KAGGLE_TIERS = {  # UserAchievementTier; STAFF, ORGANIZATION and RECALC say nothing of skill
    "NOVICE": "novice",
    "CONTRIBUTOR": "contributor",
    "EXPERT": "expert",
    "MASTER": "master",
    "GRANDMASTER": "grandmaster",
}
_HTML = re.compile(r"<(p|div|br|a|code|pre|ul|ol|li|h\d|strong|em)\b", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")


@dataclass
class Fetched:
    ingested: Ingested
    cutoff: date | None  # the one applied: the caller's, else the competition's deadline
    notebooks: int  # how many notebooks and scripts Kaggle listed
    topics: int
    warnings: list[str] = field(default_factory=list)


def author_tier(value: object) -> str:
    """Kaggle's performance tier (an enum, its name, or its number 0-4) as a knowledge tier;
    "unknown" for anything else (staff, organizations, nothing)."""
    value = getattr(value, "name", value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return TIERS[value] if 0 <= value < 5 else "unknown"
    name = str(value or "").upper().rsplit("_", 1)[-1]  # USER_ACHIEVEMENT_TIER_EXPERT -> EXPERT
    return _KAGGLE_TIERS.get(name, "unknown")


def ingest_competition(
    task_root: Path, slug: str, *, limit: int = DEFAULT_LIMIT, cutoff: date | None = None
) -> Fetched:
    """Fetch up to ``limit`` notebooks and ``limit`` topics of competition ``slug`` and store
    those dated on or before the cut-off (``cutoff``, else the competition's deadline). A
    failure to list the notebooks raises KaggleError before anything is written; one to list
    the discussions, or one notebook or topic that fails, is a warning; a rate limit midway
    stops the fetching and keeps what came (running again fetches the rest: what is already
    stored is kept once)."""
    client = connect()
    deadline = client.competition(slug).deadline  # an unknown name fails here, before anything is fetched
    if cutoff is None and deadline is not None:
        cutoff = deadline.date()
    fetch = _Fetch(client, slug, cutoff)
    kernels = client.kernels(slug, limit)
    items = fetch.notebooks(kernels)
    topics: list[Topic] = []
    if not fetch.stopped:
        try:
            topics = client.topics(slug, limit)
        except KaggleError as exc:  # the notebooks are worth keeping all the same
            fetch.warnings.append(f"discussions not read: {exc.message}")
        items += fetch.posts(topics)
    return Fetched(store_items(task_root, items, cutoff), cutoff, len(kernels), len(topics), fetch.warnings)


class _Fetch:
    """One ingestion's state: the warnings so far, and whether a rate limit stopped it."""

    def __init__(self, client: KaggleClient, slug: str, cutoff: date | None):
        self.client, self.slug, self.cutoff = client, slug, cutoff
        self.warnings: list[str] = []
        self.stopped = False
        self.searching = True  # until a search fails: the signals it adds are not worth more failures

    def _late(self, when: date) -> bool:
        return self.cutoff is not None and when > self.cutoff

    def _stop(self, exc: RateLimited, done: int, of: int, what: str) -> None:
        self.stopped = True
        self.warnings.append(
            f"stopped after {done} of {of} {what}: {exc.message}; {exc.fix} for the rest "
            "(what is already stored is not stored twice)"
        )

    def notebooks(self, kernels: list[Kernel]) -> list[Item]:
        items = []
        with tempfile.TemporaryDirectory(prefix="mlguild-kernels-") as tmp:
            for n, kernel in enumerate(kernels):
                try:
                    items.append(self._notebook(kernel, Path(tmp) / str(n)))
                except RateLimited as exc:
                    self._stop(exc, n, len(kernels), "notebooks")
                    break
                except (KaggleError, TaskError) as exc:
                    self.warnings.append(f"skipped notebook {kernel.ref}: {exc.message}")
        return items

    def _notebook(self, kernel: Kernel, dest: Path) -> Item:
        if kernel.last_run is None:
            raise KaggleError("Kaggle gives no date for it, and the cut-off needs one")
        item = Item(
            id="",
            kind=kernel.kernel_type,
            title=kernel.title[:300],
            author=kernel.author[:100],
            author_tier="unknown",
            votes=kernel.votes,
            public_score=None,
            date=kernel.last_run.date().isoformat(),
            source=f"https://www.kaggle.com/code/{kernel.ref}",
            text="",
        )
        if self._late(kernel.last_run.date()):
            return item  # store_items leaves it out and reports it; its source is not even downloaded
        path = self.client.pull_kernel(kernel.ref, dest)
        raw = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".ipynb":
            item = replace(item, kind="notebook", text=notebook_text(raw, f"notebook {kernel.ref}"))
        elif path.suffix == ".py":
            item = replace(item, kind="script", text=f"```python\n{raw.strip()}\n```")
        else:
            raise TaskError(f"Kaggle sent {path.name}, neither a Python notebook nor a script")
        if not item.text.strip():
            raise TaskError("it holds no code and no text")
        return self._with_signals(replace(item, text=item.text[:_MAX_TEXT]), kernel)

    def _with_signals(self, item: Item, kernel: Kernel) -> Item:
        if not self.searching:
            return item
        try:
            signals = self.client.kernel_signals(kernel.ref, kernel.title)
        except KaggleError as exc:
            self.searching = False
            self.warnings.append(f"authors' tiers and public scores not read (Kaggle's search): {exc.message}")
            return item
        if signals is None:
            return item
        return replace(item, author_tier=author_tier(signals.tier), public_score=signals.best_public_score)

    def posts(self, topics: list[Topic]) -> list[Item]:
        items = []
        for n, topic in enumerate(topics):
            try:
                items.append(self._post(topic))
            except RateLimited as exc:
                self._stop(exc, n, len(topics), "discussion topics")
                break
            except KaggleError as exc:
                self.warnings.append(f"skipped discussion {topic.url}: {exc.message}")
        # A topic none of whose messages is dated before the cut-off has nothing to keep.
        return [item for item in items if item.text or self._late(date.fromisoformat(item.date))]

    def _post(self, topic: Topic) -> Item:
        if topic.posted is None:
            raise KaggleError("Kaggle gives no date for it, and the cut-off needs one")
        item = Item(
            id="",
            kind="post",
            title=topic.title[:300],
            author=topic.author[:100],
            author_tier="unknown",
            votes=topic.votes,
            public_score=None,
            date=topic.posted.date().isoformat(),
            source=topic.url,
            text="",
        )
        if self._late(topic.posted.date()):
            return item  # left out and reported by store_items, its messages not even read
        parts = []
        for message in self.client.topic_messages(self.slug, topic.id):
            if message.posted is None or self._late(message.posted.date()):
                continue  # a reply from after the cut-off may tell what the competition revealed
            body = _plain(message.text)
            if body:
                parts.append(f"**{message.author}**, {_day(message.posted)}, {message.votes} votes:\n\n{body}")
        return replace(item, text="\n\n---\n\n".join(parts)[:_MAX_TEXT])


def _plain(text: str) -> str:
    """A message's Markdown, cleaned; or its HTML (what Kaggle gives when it has no Markdown)
    without images and widgets, as plain text."""
    text = clean_markdown(text)
    if not _HTML.search(text):
        return text
    text = re.sub(r"<br\s*/?>|</(p|div|li|h\d|pre)>", "\n", text, flags=re.IGNORECASE)
    return clean_markdown(html.unescape(_TAG.sub("", text)))


def _day(when: datetime) -> str:
    return when.date().isoformat()
