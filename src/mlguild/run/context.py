"""What a brain sees for one proposal: isolated and bounded.

The task, the data profile and the parents (their plans, code, output tails, run times and
what was already built on them), a bounded summary of history, the best node of each branch,
for an evolve its branch's trajectory, and the most similar experience records. Never every
node's code: the context does not grow with the graph. Nothing here reads a sealed file, and
a node's files are read without following links a script may have left.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.graph import Node, SearchGraph
from ..core.protocols import Action, Context, HistoryItem, ParentView, Repair
from ..core.score import POOLED_LABEL
from ..core.vocabulary import Op
from ..memory import Memory, Recall, repaired_recipe
from ..metrics import get_metric
from ..pools import Pools
from ..pools.ideas import idea_ids, in_flight, key_words
from ..rundir.folder import RunDir
from ..scoring.flags import describe
from ..task.brief import read_brief
from ..util.fs import read_text_no_follow
from .budget import full_limit_s
from .evidence import Evidence
from .executor import OUTPUT_TAIL

_TRIED_SHOWN = 8  # children of a parent a prompt lists
_LEADERS_SHOWN = 5  # branches a prompt lists the best node of
_TRAJECTORY_SHOWN = 20  # nodes of a branch an evolve prompt lists
_REPAIRS_SHOWN = 3  # repairs of recipe scripts a draft may carry over
_BRANCH_REPORTS = 4  # reports of the parent's branch (its latest nodes) an idea query reads
_PARENT_WORDS = 24  # of an idea query's words, those from the parents (the branch's reports get the rest)


class ContextBuilder:
    def __init__(
        self,
        run: RunDir,
        memory: Memory,
        direction: str,
        pools: Pools | None = None,
        spread: Callable[[str], float | None] | None = None,
        columns: Callable[[str], dict[str, float] | None] | None = None,
    ):
        """``spread``: the bootstrap spread of a node's holdout score (the harness's, from
        sealed labels; only its size reaches a prompt), for the noise floor a prompt states."""
        self.run, self.memory, self.direction, self.pools = run, memory, direction, pools
        self.spread, self.columns = spread, columns
        self._spreads: dict[str, float | None] = {}
        self._columns: dict[str, dict[str, float] | None] = {}
        self.profile = run.profile.to_dict()
        self.brief: str | None = None  # read at the first proposal: an edit takes effect on resume
        self.evidence = Evidence(run)  # per-fold scores, where a node errs, its blend

    def build(self, graph: SearchGraph, action: Action, iteration: int, timeout: float, node: str = "") -> Context:
        """What the brain sees for ``action``; ``node``: the id of the node it is for (its own
        offer is not counted among the ideas in flight when its context is built again)."""
        parents = tuple(self.parent_view(graph, graph[p]) for p in action.parents)
        if self.brief is None:
            self.brief = read_brief(self.run.path)
        history = tuple(
            HistoryItem(
                n.id,
                n.op,
                n.status,
                n.score,
                n.meta,
                n.timing.get("exec_s"),
                n.failure[-1000:] if n.failure else None,
                bool(n.timing.get("cut_short")),
                n.title,
                n.holdout_score is not None,  # a pooled score, labelled so in the prompt
            )
            for n in list(graph)[-self.run.config.brain.history_length :]
        )
        return Context(
            task=self.run.spec.public_dict(),
            description=self.run.description,
            profile=self.profile,
            parents=parents,
            history=history,
            direction=self.direction,
            script_timeout_s=timeout,
            seed=self.run.config.brain.seed,
            iteration=iteration,
            stagnation=graph.stagnation(action.parents[0]) if action.parents else 0,
            leaders=leaders(graph),
            trajectory=trajectory(graph, action),
            recall=self.recall(graph, action, parents),
            reports=self.reports(graph, action, parents),
            ideas=self.ideas(graph, action, parents, node),
            repairs=self.repairs(graph) if action.op == Op.DRAFT else (),
            move_priors=self.memory.move_priors(),
            family_priors=self.memory.family_priors(),
            family_configs=self.memory.family_configs(),
            brief=self.brief,
            why=why_chosen(graph, action),
            full_limit_s=full_limit_s(self.run.config),
            train_rows=action.rows,
            noise=self.noise(graph),
            earlier_bests=tuple(self.memory.earlier_bests()),
            memory=PlanRecall(self.memory, str(action.op), self.shown(graph, parents)),
        )

    def noise(self, graph: SearchGraph) -> str:
        """How far apart two holdout scores must be to say more than noise: the seed spread
        re-runs measured, else the bootstrap spread of the best node's holdout score (computed
        by the harness once per best node); empty before any node scored."""
        rows = self.profile.get("n_holdout") or 0
        measured = graph.noise_floor()
        if measured is not None:
            return (
                f"Holdout scores ({rows} rows) closer than about {measured:.2g} are within noise: "
                "the seed spread re-runs measured on this task."
            )
        best = graph.best()
        if best is None or self.spread is None:
            return ""
        if best.id not in self._spreads:
            try:
                self._spreads[best.id] = self.spread(best.id)
            except Exception:  # a holdout the scorer cannot resample: no figure rather than no proposal
                self._spreads[best.id] = None
        spread = self._spreads[best.id]
        if spread is None:
            return ""
        return (
            f"Holdout scores ({rows} rows) closer than about {spread:.2g} are within noise: the bootstrap "
            f"spread of the best node's ({best.id}) score over resamples of the holdout rows."
        )

    def recall(self, graph: SearchGraph, action: Action, parents: tuple[ParentView, ...]) -> Recall:
        """The records most like what this proposal is about: its parents' plans, changes and
        failures (for a draft, the task's type, metric and column kinds)."""
        if parents:
            query = " ".join(
                f"{p.plan[:400]} {p.meta.get('recipe', '')} {p.meta.get('move', '')} {p.status} {(p.failure or '')[-400:]}"
                for p in parents
            )
        else:
            kinds = " ".join(sorted({c["kind"] for c in self.profile.get("columns", [])}))
            query = f"draft {self.run.spec.task_type} {self.run.spec.metric} {kinds}"
        return self.memory.recall(f"{action.op} {query}", skip=self.shown(graph, parents))

    @staticmethod
    def shown(graph: SearchGraph, parents: tuple[ParentView, ...]) -> frozenset[str]:
        """The nodes a prompt shows already: the parents and what was built on them."""
        return frozenset({p.node_id for p in parents} | {c.id for p in parents for c in graph.children(p.node_id)})

    def reports(self, graph: SearchGraph, action: Action, parents: tuple[ParentView, ...]) -> tuple[str, ...]:
        """The reports of the run's other nodes most like what this proposal is about (the
        parents and what was built on them are in the prompt already)."""
        k = self.run.config.pools.reports_shown
        if self.pools is None or not k:
            return ()
        shown = {p.node_id for p in parents} | {c.id for p in parents for c in graph.children(p.node_id)}
        query = " ".join(f"{p.plan[:400]} {p.meta.get('recipe', '')} {p.meta.get('move', '')}" for p in parents)
        query = query or f"{self.run.spec.task_type} {self.run.spec.metric}"
        return tuple(r.digest() for r in self.pools.reports.relevant(f"{action.op} {query}", k, skip=shown))

    def ideas(
        self, graph: SearchGraph, action: Action, parents: tuple[ParentView, ...] = (), node: str = ""
    ) -> tuple[str, ...]:
        """For a draft, an improve or an evolve: the ideas offered to this node, best ranked
        first (mlguild.pools.ideas): relevant to its parent's plan and its branch's reports (a
        draft: to the task), and down-weighted where the other nodes in flight hold them, so
        that parallel workers are offered different ideas."""
        k = self.run.config.pools.ideas_shown
        if self.pools is None or not k or action.op not in (Op.DRAFT, Op.IMPROVE, Op.EVOLVE):
            return ()
        query = self.idea_query(graph, parents)
        busy = in_flight(n.meta for n in graph if not n.finished and n.id != node)
        return tuple(i.line() for i in self.pools.ideas.ranked(query, k, self.direction, busy))

    def idea_query(self, graph: SearchGraph, parents: tuple[ParentView, ...]) -> str:
        """What the node is about, for the ideas' relevance: its parents (title, recipe, move,
        plan), then the reports of their branch's latest other nodes; for a draft, the task's
        type, metric, column kinds and brief. The index reads only a query's first words
        (util/sqlite's MAX_TERMS): the parents get the first ``_PARENT_WORDS`` of them, the
        branch's reports the rest."""
        if not parents:
            kinds = " ".join(sorted({c["kind"] for c in self.profile.get("columns", [])}))
            return f"{self.run.spec.task_type} {self.run.spec.metric} {kinds} {self.brief or ''}"[:4000]
        own = key_words(
            " ".join(f"{p.title} {p.meta.get('recipe', '')} {p.meta.get('move', '')} {p.plan[:2000]}" for p in parents)
        )[:_PARENT_WORDS]
        reports: list[str] = []
        if self.pools is not None:
            ids = {p.node_id for p in parents}
            branches = {graph[p].branch for p in ids if p in graph.nodes}
            branch = [n for n in graph if n.branch in branches and n.finished and n.id not in ids]
            for member in branch[-_BRANCH_REPORTS:]:
                try:
                    report = self.pools.reports.get(member.id)
                except KeyError:  # not reported (a blend, a refit) or not yet in the pool
                    continue
                reports.append(" ".join([report.method, *report.components, report.helped]))
        return " ".join(own + [w for w in key_words(" ".join(reports)) if w not in own])

    def repairs(self, graph: SearchGraph) -> tuple[Repair, ...]:
        """The latest scored repairs, not written by the recipes, of failed recipe scripts:
        what a draft of that recipe carries over (mlguild.brains.repair_port). This run's
        first, newest first; then earlier runs' of this task, from the shared memory (their
        node named ``RUN/NODE``)."""
        found: list[Repair] = []
        for node in reversed(list(graph)):
            if len(found) >= _REPAIRS_SHOWN:
                break
            parent = repaired_recipe(node, graph)
            if parent is None:
                continue
            failed = read_text_no_follow(self.run.node_dir(parent.id) / "solution.py")
            fixed = read_text_no_follow(self.run.node_dir(node.id) / "solution.py")
            found.append(Repair(node.id, str(parent.meta["recipe"]), failed, fixed))
        earlier = self.memory.repairs()[:_REPAIRS_SHOWN]
        found += [Repair(f"{r.run}/{r.node}", r.recipe, r.failed_code, r.fixed_code) for r in earlier]
        return tuple(found)

    def parent_view(self, graph: SearchGraph, node: Node) -> ParentView:
        d = self.run.node_dir(node.id)
        # Never follow a link a script left in its directory: it could point at sealed labels.
        read = lambda name: read_text_no_follow(d / name)
        stdout = read("stdout.txt")
        branch = [n for n in graph if n.branch == node.branch and n.finished and n.op != Op.RERUN]
        return ParentView(
            node.id,
            node.op,
            node.plan,
            read("solution.py"),
            node.status,
            node.score if node.holdout_score is None else node.holdout_score,  # shown as the holdout's
            node.failure,
            node.meta,
            stdout[-OUTPUT_TAIL:],
            read("stderr.txt")[-OUTPUT_TAIL:],
            exec_s=node.timing.get("exec_s"),
            budget_s=node.timing.get("budget_s"),
            tried=tuple(outcome_line(c, node) for c in graph.children(node.id)[-_TRIED_SHOWN:]),
            warnings=tuple(
                describe(f, get_metric(self.run.spec.metric), node.score, node.oof_score) for f in node.flags
            ),
            oof_score=node.oof_score,
            title=node.title,
            column_scores=self.column_scores(node),
            branch_last_failed=not node.ok or bool(branch and not branch[-1].ok),
            evidence=self.evidence.lines(graph, node, stdout),
        )

    def column_scores(self, node: Node) -> dict[str, float] | None:
        """A scored node's holdout score on each target column (several targets), once per node."""
        if not node.ok or self.columns is None:
            return None
        if node.id not in self._columns:
            try:
                self._columns[node.id] = self.columns(node.id)
            except Exception:  # a holdout the scorer cannot split by column: no figures rather than no proposal
                self._columns[node.id] = None
        return self._columns[node.id]


class PlanRecall:
    """The memory a brain asks at proposal time (``MemoryQuery``): a planner's draft plan as
    the query, the op and the nodes its prompt shows already as ``recall`` has them."""

    def __init__(self, memory: Memory, op: str, skip: frozenset[str]):
        self.memory, self.op, self.skip = memory, op, skip

    def recall(self, query: str) -> Recall:
        return self.memory.recall(f"{self.op} {query}", skip=self.skip)


def trajectory(graph: SearchGraph, action: Action) -> tuple[str, ...]:
    """For an evolve: every node of the parent's branch, oldest first (the last
    ``_TRAJECTORY_SHOWN``), each with its result against its own parent."""
    if action.op != Op.EVOLVE or not action.parents:
        return ()
    branch = graph[action.parents[0]].branch
    members = [n for n in graph if n.branch == branch and n.finished and n.op != Op.REFIT]
    return tuple(
        outcome_line(n, graph.nodes.get(n.parents[0]) if n.parents else None) for n in members[-_TRAJECTORY_SHOWN:]
    )


def leaders(graph: SearchGraph) -> tuple[str, ...]:
    """The best node of each of the best branches, one line each, so that a prompt about
    one branch knows how the others are doing."""
    best_of_branch: dict[str, Node] = {}
    for node in graph.ranked():
        best_of_branch.setdefault(node.branch, node)
        if len(best_of_branch) >= _LEADERS_SHOWN:
            break
    return tuple(outcome_line(n) for n in best_of_branch.values())


def why_chosen(graph: SearchGraph, action: Action) -> str:
    """Why the search chose ``action``'s parent, in words a prompt can state: the best node,
    a branch it explores, a stagnant branch, a failure to repair, a re-run; then the policy's
    own reason."""
    reason = f" (the search's reason: {action.reason})" if action.reason else ""
    if not action.parents or action.parents[0] not in graph.nodes:
        return action.reason
    parent, best = graph[action.parents[0]], graph.best()
    if action.op == Op.DEBUG:
        return f"{parent.id} failed ({parent.status}): repair it{reason}"
    if action.op == Op.FUSE:
        return f"the best nodes of {len(action.parents)} branches, to combine their strengths{reason}"
    if best is not None and parent.id == best.id:
        standing = f"{parent.id} is the run's best node"
    elif best is not None and parent.ok:
        standing = (
            f"{parent.id} is not the best node (the best is {best.id}, {best.score:.6g}"
            f"{f' {POOLED_LABEL}' if best.holdout_score is not None else ''}): the search explores "
            "its branch, which may lead further than the best's"
        )
    else:
        standing = f"{parent.id} is the node to build on"
    stagnation = graph.stagnation(parent.id)
    if stagnation >= 2:
        standing += f"; its branch has gone {stagnation} attempts without a gain"
    return standing + reason


def outcome_line(node: Node, parent: Node | None = None) -> str:
    """One line: the node, its title and how it went (against ``parent`` when given)."""
    what = node.title or str(node.meta.get("summary") or node.meta.get("move") or node.meta.get("recipe") or node.op)
    what = " ".join(what.split())
    seconds = f", {node.timing['exec_s']:.0f} s" if node.timing.get("exec_s") is not None else ""
    if not node.ok:
        last = ((node.failure or "").strip().splitlines() or [""])[-1][:160]
        return f"{node.id} ({node.op}) {what}: failed ({node.status}{seconds}) {last}".rstrip()
    verdict = ""
    if parent is not None and parent.ok and parent.score is not None and node.score is not None:
        verdict = f", {node.score - parent.score:+.4g} against it"
    pooled = f" ({POOLED_LABEL})" if node.holdout_score is not None else ""
    return f"{node.id} ({node.op}) {what}: {node.score:.6g}{pooled}{verdict}{seconds}"


def offer(node: Node, context: Context) -> None:
    """Record on ``node`` (in flight, its meta journaled when it starts) the ideas ``context``
    offers it, so that other workers choosing meanwhile see them taken."""
    if context.ideas:
        node.meta["ideas_offered"] = idea_ids(context.ideas)
