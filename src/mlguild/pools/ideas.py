"""The idea pool: atomic ideas from the community corpus and from this run's reports.

An idea is one sentence a script can act on ("log-transform the target before fitting").
It keeps its sources, each with its quality signals (kind, author tier, votes, public score,
date), and the nodes that tried it with their outcomes. The same idea said twice, in other
words, is kept once: two ideas whose content words overlap by ``SAME_IDEA`` (Jaccard) are
merged, their sources joined.

Ideas are ranked for selection by three things a careful competitor weighs: the community's
signal (votes, weighted by the author's tier, a good public score, several independent
sources), the relevance to the node at hand (BM25 against a query: its parent's plan and its
branch's reports, or for a draft the task's words), and what this run saw when it tried them
(a gain raises an idea, a failure or no gain lowers it; an idea nobody has tried yet gets a
small bonus, so the pool is explored). A fourth keeps parallel workers apart: an idea the
nodes in flight were offered or are trying loses what they hold of it (``busy``), so two
workers offered ideas at once are offered different ones where the pool allows. Whatever the
ranks, the idea the run's latest gain came from is always in the list.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from .store import PoolStore

SAME_IDEA = 0.6  # Jaccard overlap of content words above which two ideas are one
COMMUNITY, REPORT = "community", "report"  # where an idea came from
_TIER_WEIGHT = {"grandmaster": 1.0, "master": 0.85, "expert": 0.7, "contributor": 0.5, "novice": 0.35}
_UNKNOWN_TIER = 0.45
_UNTRIED_BONUS = 0.3
# What a node in flight takes off an idea's rank for the other workers: trying it (its plan
# cites it) a whole relevance; only being offered it half, since it may choose another.
IN_USE, OFFERED = 1.0, 0.5
_TRIAL_VALUE = {"gain": 1.0, "new best": 1.0, "first": 0.3, "no gain": -0.3, "failed": -0.7}
_STOP = frozenset(
    "the and for with from that this then than into onto using use used your our their its are was were "
    "will can could should would may might also just very more most less some any all each per via not "
    "but have has had been being which what when where how why who it's".split()
)
_WORD = re.compile(r"[a-z0-9]+")
_IDEA_ID = re.compile(r"\bi[0-9a-f]{6}\b")
_LINE_ID = re.compile(r"\[(i[0-9a-f]{6})\]")


@dataclass(frozen=True)
class Source:
    """Where an idea was read, with the signals that say how much to trust it."""

    item: str  # a knowledge item's id, or a node's id for an idea from a report
    title: str = ""
    kind: str = ""
    author_tier: str = "unknown"
    votes: int = 0
    public_score: float | None = None
    date: str = ""
    gain: float | None = None  # an earlier run's node (kind "run"): the gain it measured, in score spreads
    weight: float = 1.0  # how much that run counts here (a similar task's: below 1; mlguild.pools.guild)


@dataclass(frozen=True)
class Trial:
    node: str
    outcome: str  # a report's outcome: "new best", "gain", "no gain", "first", "failed"


@dataclass
class Idea:
    id: str
    text: str
    origin: str  # COMMUNITY or REPORT
    sources: list[Source] = field(default_factory=list)
    trials: list[Trial] = field(default_factory=list)

    def line(self) -> str:
        """One line for a prompt: the idea, its strongest source's signals, how it went here."""
        best = max(self.sources, key=lambda s: s.votes, default=None)
        signal = ""
        if best is not None and best.kind == "run":  # an earlier run of this task (mlguild.pools.guild)
            similar = f"; a similar task's, weight {best.weight:.2f}" if best.weight < 1.0 else ""
            signal = f" (earlier run's node {best.item}: {best.gain or 0:+.2f} score spreads over its parent{similar})"
        elif best is not None and self.origin == COMMUNITY:
            score = f", public score {best.public_score:g}" if best.public_score is not None else ""
            more = f", +{len(self.sources) - 1} more source(s)" if len(self.sources) > 1 else ""
            signal = f" ({best.kind or 'post'} by a {best.author_tier} author, {best.votes} votes{score}{more})"
        elif self.origin == REPORT:
            signal = f" (from this run's report of {', '.join(s.item for s in self.sources)})"
        tried = ""
        if self.trials:
            tried = "; tried here: " + ", ".join(f"{t.node} {t.outcome}" for t in self.trials[-4:])
        return f"[{self.id}] {self.text}{signal}{tried}"


def content_words(text: str) -> frozenset[str]:
    """The words that carry an idea's meaning, crudely stemmed so that "features" and
    "feature", "encoding" and "encoded" meet."""
    words = set()
    for word in _WORD.findall(text.lower()):
        if len(word) < 3 or word in _STOP:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 4:
                word = word[: -len(suffix)]
                break
        words.add(word)
    return frozenset(words)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


class IdeaPool:
    def __init__(self, store: PoolStore):
        self.store = store

    def add(self, text: str, origin: str, source: Source) -> Idea:
        """Keep ``text`` as an idea, or, when the pool holds the same idea, add ``source`` to it."""
        text = " ".join(text.split()).strip(" -*•")
        words = content_words(text)
        if not words:
            raise ValueError(f"not an idea: {text!r}")
        same = max(self.all(), key=lambda i: overlap(words, content_words(i.text)), default=None)
        if same is not None and overlap(words, content_words(same.text)) >= SAME_IDEA:
            if source.item not in {s.item for s in same.sources}:
                same.sources.append(source)
                self._put(same)
            return same
        idea = Idea("i" + hashlib.sha256(" ".join(sorted(words)).encode()).hexdigest()[:6], text, origin, [source])
        self._put(idea)
        return idea

    def record_trial(self, idea_id: str, node: str, outcome: str) -> bool:
        """Link ``node`` and its outcome to the idea; False when the pool has no such idea (a
        model may cite an id it made up)."""
        try:
            idea = self.get(idea_id)
        except KeyError:
            return False
        idea.trials = [t for t in idea.trials if t.node != node] + [Trial(node, outcome)]
        self._put(idea)
        return True

    def get(self, idea_id: str) -> Idea:
        data = json.loads(self.store.value("ideas", idea_id))
        return Idea(
            data["id"],
            data["text"],
            data["origin"],
            [Source(**s) for s in data["sources"]],
            [Trial(**t) for t in data["trials"]],
        )

    def all(self) -> list[Idea]:
        return [self.get(key) for key in self.store.keys("ideas")]

    def ranked(
        self, query: str, k: int, direction: str = "maximize", busy: Mapping[str, float] | None = None
    ) -> list[Idea]:
        """The ``k`` ideas to try next, best first (see the module's note); ties: oldest first.
        ``query``: what the node is about (BM25 relevance); ``busy``: per idea, how much the
        nodes in flight hold it (``IN_USE`` per node trying it, ``OFFERED`` per node offered
        it), taken off its rank."""
        ideas = self.all()
        if not ideas or k <= 0:
            return []
        relevance = self.store.scores("ideas", query)
        top_relevance = max(relevance.values(), default=0.0) or 1.0
        community = _community_signal(ideas, direction)
        busy = busy or {}
        ranks = {
            idea.id: community[idea.id]
            + max(0.0, relevance.get(idea.id, 0.0)) / top_relevance
            + _observed(idea)
            - busy.get(idea.id, 0.0)
            for idea in ideas
        }
        order = {idea.id: i for i, idea in enumerate(ideas)}
        chosen = sorted(ideas, key=lambda i: (-ranks[i.id], order[i.id]))[:k]
        latest = _latest_worked(ideas)
        if latest is not None and latest not in chosen:  # what just worked is always offered
            chosen = [*chosen[: k - 1], latest]
        return chosen

    def _put(self, idea: Idea) -> None:
        self.store.put("ideas", idea.id, json.dumps(asdict(idea)), idea.text)


def _latest_worked(ideas: list[Idea]) -> Idea | None:
    """The idea the run's latest gain came from (its trial's node is the newest with a gain or
    a new best), or None: a list that leaves it out hides the one direction measured to work."""
    worked = [(t.node, idea) for idea in ideas for t in idea.trials if t.outcome in ("gain", "new best")]
    return max(worked, key=lambda w: w[0])[1] if worked else None


def _community_signal(ideas: list[Idea], direction: str) -> dict[str, float]:
    """Per idea, in [0, 1.5]: its best source's votes (log, over the pool's most), weighted by
    the author's tier, plus up to 0.25 for a source with a top public score and up to 0.25
    for independent sources."""
    votes = [s.votes for i in ideas for s in i.sources]
    top_votes = math.log1p(max(votes, default=0)) or 1.0
    scores = sorted({s.public_score for i in ideas for s in i.sources if s.public_score is not None})
    signal = {}
    for idea in ideas:
        value = 0.0
        for s in idea.sources:
            if s.kind == "run":  # measured by an earlier run of this task: its gain is the signal
                value = max(value, s.weight * min(1.25, 0.5 + 0.5 * max(0.0, s.gain or 0.0)))
                continue
            weight = _TIER_WEIGHT.get(s.author_tier, _UNKNOWN_TIER)
            score_bonus = 0.0
            if s.public_score is not None and len(scores) > 1:
                position = scores.index(s.public_score) / (len(scores) - 1)
                score_bonus = 0.25 * (position if direction == "maximize" else 1.0 - position)
            value = max(value, weight * math.log1p(s.votes) / top_votes + score_bonus)
        signal[idea.id] = value + min(0.25, 0.1 * (len(idea.sources) - 1))
    return signal


def _observed(idea: Idea) -> float:
    if not idea.trials:
        return _UNTRIED_BONUS
    return sum(_TRIAL_VALUE.get(t.outcome, 0.0) for t in idea.trials) / len(idea.trials)


def cited_ideas(plan: str, offered: tuple[str, ...]) -> list[str]:
    """The ids of the ``offered`` ideas (prompt lines starting "[id]") that ``plan`` names."""
    ids = {line[1:8] for line in offered if line.startswith("[i")}
    return [found for found in dict.fromkeys(_IDEA_ID.findall(plan)) if found in ids]


def key_words(text: str) -> list[str]:
    """The distinct words of ``text`` that carry meaning (no stop words, none under three
    letters), in order: a query for the ideas' index, which reads only its first words."""
    return list(dict.fromkeys(w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP))


def idea_ids(lines: Iterable[str]) -> list[str]:
    """The ids of prompt lines of ideas (``[i3fa9c1] ...``, as ``Idea.line`` writes them)."""
    return [found.group(1) for line in lines if (found := _LINE_ID.match(line))]


def in_flight(metas: Iterable[Mapping[str, object]]) -> dict[str, float]:
    """Per idea, how much the nodes in flight (their metas) hold it: ``IN_USE`` for each that
    cites it (meta ``ideas``), else ``OFFERED`` for each that was offered it (``ideas_offered``)."""
    load: dict[str, float] = {}
    for meta in metas:
        used = {str(i) for i in _listed(meta.get("ideas"))}
        for idea in used | {str(i) for i in _listed(meta.get("ideas_offered"))}:
            load[idea] = load.get(idea, 0.0) + (IN_USE if idea in used else OFFERED)
    return load


def _listed(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else []
