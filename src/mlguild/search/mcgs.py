"""Monte Carlo graph search: UCT over the node graph, exploring early and exploiting late.

Each choice descends from a virtual root (whose children are the drafts and fuses) to the
node to improve next: at every node, either it is widened with one more child (progressive
widening: a node tried N times may have about ``widen_base * N ** widen_power`` children) or
the descent goes on into the child with the best upper confidence bound, mean reward plus an
exploration bonus. Rewards come from the harness alone (a valid result, a new global best, a
repaired failure, a penalty for a failure; ``tree_stats.Rewards``). The exploration weight
decays over the run's budget, and late in the run a growing share of choices improves one of
the top-K nodes instead, at most ``branch_cap`` of them from one branch. A node whose last few
children all gained next to nothing is terminal: the search builds on its children instead.
Broken leaves are repaired (up to a depth cap), and fresh drafts come periodically.

The policy is a seeded function of the graph and the run's budget: the budget's progress is
read from the node timings in the journal, not from a clock, so a resumed run makes the same
choice the uninterrupted run would have made.
"""

from __future__ import annotations

import math
import random

from ..config import BudgetConfig, SearchConfig
from ..core.graph import Node, SearchGraph
from ..core.protocols import Action
from ..core.vocabulary import DEBUGGABLE, Op
from .blend import blend_action
from .evidence import evidence_action
from .tree_stats import ROOT, Rewards, TreeStats, ancestors


class MCGSPolicy:
    def __init__(self, cfg: SearchConfig, budget: BudgetConfig | None = None):
        self.cfg, self.mc = cfg, cfg.mcgs
        self.budget = budget or BudgetConfig()
        self.stats = TreeStats(
            Rewards(self.mc.reward_valid, self.mc.reward_new_best, self.mc.reward_debug_fixed, self.mc.reward_failure)
        )
        self._dead: set[str] = set()  # subtrees the descent found nothing to improve in, until they grow

    def select(self, graph: SearchGraph, iteration: int) -> Action:
        rng = random.Random(f"mcgs:{self.cfg.seed}:{iteration}")  # string seeds hash alike in every process
        for node_id in self.stats.update(graph):
            self._dead.difference_update(ancestors(graph, node_id))
        self._dead.discard(ROOT)
        track = self.stats
        if track.drafts < self.cfg.num_drafts:
            return Action(Op.DRAFT, (), f"draft {track.drafts + 1} of {self.cfg.num_drafts}")

        rerun = evidence_action(graph, self.cfg)  # a near-tie candidate gets its re-runs before anything else
        if rerun is not None:
            return rerun
        debuggable = [
            graph[i]
            for i in track.failed_leaves
            if graph[i].status in DEBUGGABLE and graph[i].debug_depth < self.cfg.max_debug_depth
        ]
        if debuggable and (not track.ranked or rng.random() < self.cfg.debug_probability):
            broken = max(debuggable, key=lambda n: n.iteration)  # freshest failure first
            return Action(Op.DEBUG, (broken.id,), f"repair {broken.id} ({broken.status})")

        blend = blend_action(graph, self.cfg, (graph[i] for _, _, i in self.stats.ranked))
        if blend is not None:
            return blend
        if self.cfg.draft_every and iteration % self.cfg.draft_every == 0:
            return Action(Op.DRAFT, (), f"periodic fresh draft (every {self.cfg.draft_every})")

        progress = self.progress(graph)
        if rng.random() < self.exploit_share(progress):
            top = self.top_k(graph)
            if top:
                # Spread the late attempts over the top K: the least-tried first, the better on a tie.
                target = min(top, key=lambda n: (len(self.stats.children[n.id]), top.index(n)))
                action = Action(Op.IMPROVE, (target.id,), f"exploit: improve {target.id}, one of the top {len(top)}")
                return self._stagnation_move(graph, target, rng) or action
        target_id = self._descend(graph, self.exploration(progress))
        if target_id is None:
            return Action(Op.DRAFT, (), "every node is terminal or broken: a fresh draft")
        action = Action(Op.IMPROVE, (target_id,), f"UCT: improve {target_id} (progress {progress:.0%})")
        return self._stagnation_move(graph, graph[target_id], rng) or action

    def _stagnation_move(self, graph: SearchGraph, chosen: Node, rng: random.Random) -> Action | None:
        """For a node of a stagnant branch: evolve the branch's best node from the branch's
        whole trajectory, or fuse it with the best nodes of other branches."""
        branch, after = chosen.branch, self.mc.stagnation_after
        since = self.stats.branch_since.get(branch, 0)
        if not after or since < after:
            return None
        best = graph[self.stats.branch_best_id.get(branch, chosen.id)]
        why = f"branch {branch} brought no gain in its last {since} nodes"
        partners = self._partners(graph, best, self.mc.fuse_parents - 1)
        if partners and rng.random() < self.mc.fuse_share:
            return Action(Op.FUSE, (best.id, *partners), f"{why}: fuse {best.id} with {', '.join(partners)}")
        return Action(Op.EVOLVE, (best.id,), f"{why}: evolve {best.id} from the branch's trajectory")

    def _partners(self, graph: SearchGraph, node: Node, k: int) -> tuple[str, ...]:
        """The best node of each of the ``k`` best other branches (with out-of-fold
        predictions when ``node`` has them, so a brain may blend them)."""
        found: dict[str, str] = {}
        for _, _, other_id in self.stats.ranked:
            other = graph[other_id]
            if other.branch == node.branch or other.is_blend or other.flags or other.branch in found:
                continue
            if "oof" in node.outputs and "oof" not in other.outputs:
                continue
            found[other.branch] = other.id
            if len(found) >= k:
                break
        return tuple(found.values())

    # ------------------------------------------------------------------ schedule

    def progress(self, graph: SearchGraph) -> float:
        """How much of the budget the search has used, 0..1, from the journaled node timings:
        the larger of the time share and the iteration share; with no budget at all, nodes
        over ``mcgs.horizon_nodes``."""
        track, budget = self.stats, self.budget
        shares = []
        if budget.time_s:
            shares.append(track.spent_ms / 1000 / budget.time_s)
        if budget.iterations:
            shares.append(track.searched / budget.iterations)
        if not shares:
            shares.append(track.searched / self.mc.horizon_nodes)
        return min(1.0, max(shares))

    def exploration(self, progress: float) -> float:
        """The UCT exploration weight: from ``exploration_start`` down to ``exploration_end``."""
        return self.mc.exploration_end + (self.mc.exploration_start - self.mc.exploration_end) * (1 - progress)

    def exploit_share(self, progress: float) -> float:
        """The share of choices that go to the top-K: 0 before ``exploit_start``, rising
        linearly to 1 at ``exploit_full``."""
        start, full = self.mc.exploit_start, self.mc.exploit_full
        if progress <= start:
            return 0.0
        return 1.0 if progress >= full else (progress - start) / (full - start)

    # ------------------------------------------------------------------ choices

    def top_k(self, graph: SearchGraph) -> list[Node]:
        """The best ``top_k`` improvable nodes, at most ``branch_cap`` from any one branch."""
        per_branch: dict[str, int] = {}
        top: list[Node] = []
        for _, _, node_id in self.stats.ranked:
            node = graph[node_id]
            if not self._improvable(graph, node) or per_branch.get(node.branch, 0) >= self.mc.branch_cap:
                continue
            per_branch[node.branch] = per_branch.get(node.branch, 0) + 1
            top.append(node)
            if len(top) >= self.mc.top_k:
                break
        return top

    def _descend(self, graph: SearchGraph, c: float) -> str | None:
        """The node to improve: from the root, widen or go into the best child by UCT; a
        subtree with nothing to improve is skipped (and remembered until it grows)."""
        stats, dead = self.stats, self._dead

        def pick(node_id: str) -> str | None:
            improvable = node_id != ROOT and self._improvable(graph, graph[node_id])
            children = stats.children[node_id]
            if improvable and len(children) < self.widening(stats.visits[node_id]):
                return node_id
            log_n = math.log(max(stats.visits[node_id], 1))
            tried = [k for k in children if stats.visits[k] > 0 and k not in dead]
            tried.sort(key=lambda k: (-(stats.mean(k) + c * math.sqrt(log_n / stats.visits[k])), k))
            for child in tried:
                found = pick(child)
                if found is not None:
                    return found
            if improvable:
                return node_id
            dead.add(node_id)
            return None

        return pick(ROOT)

    def widening(self, visits: int) -> int:
        """How many children a node tried ``visits`` times may have."""
        return max(1, math.floor(self.mc.widen_base * visits**self.mc.widen_power))

    def _improvable(self, graph: SearchGraph, node: Node) -> bool:
        # A blend is not improved directly: better members make a better next blend.
        return node.ok and not node.is_blend and node.op != Op.REFIT and not self.terminal(graph, node)

    def terminal(self, graph: SearchGraph, node: Node) -> bool:
        """Its last ``terminal_after`` finished children all failed or gained less than
        ``negligible_gain`` (relative to its score)."""
        n = self.mc.terminal_after
        if not n or node.score is None:
            return False
        finished = [graph[k] for k in self.stats.children[node.id] if graph[k].finished][-n:]
        if len(finished) < n:
            return False
        base = graph.score_of(node).key()
        scale = max(abs(node.score), 1e-12)
        return all(not k.ok or (graph.score_of(k).key() - base) / scale < self.mc.negligible_gain for k in finished)
