"""The search's configuration sections (``search:`` and ``search.mcgs:``), part of
mlguild.config, which re-exports them."""

from __future__ import annotations

from pydantic import Field, model_validator

from .base import _Section


class MCGSConfig(_Section):
    """Monte Carlo graph search (``search.policy: mcgs``; mlguild.search.mcgs)."""

    exploration_start: float = Field(1.4, ge=0, description="UCT exploration weight at the start of the run.")
    exploration_end: float = Field(
        0.3, ge=0, description="UCT exploration weight at the end of the budget (it decays linearly)."
    )
    widen_base: float = Field(
        1.0,
        gt=0,
        description="Progressive widening: a node tried N times may have widen_base * N^widen_power children.",
    )
    widen_power: float = Field(0.5, ge=0, le=1, description="Progressive widening exponent (see widen_base).")
    reward_valid: float = Field(1.0, description="Reward for a node that produced a scored submission.")
    reward_new_best: float = Field(1.0, description="Extra reward for a node that beat every earlier node.")
    reward_debug_fixed: float = Field(0.5, description="Extra reward for a debug step that repaired its parent.")
    reward_failure: float = Field(-1.0, le=0, description="Reward (a penalty) for a node that failed.")
    exploit_start: float = Field(
        0.6, ge=0, le=1, description="Share of the budget after which some choices improve one of the top-K nodes."
    )
    exploit_full: float = Field(
        0.9, gt=0, le=1, description="Share of the budget by which every choice improves one of the top-K nodes."
    )
    top_k: int = Field(5, ge=1, description="How many of the best nodes the late, exploiting choices spread over.")
    branch_cap: int = Field(2, ge=1, description="Most of the top-K nodes that may come from one branch.")
    terminal_after: int = Field(
        3,
        ge=0,
        description="A node whose last N children all failed or gained next to nothing is not improved again (0 = never).",
    )
    negligible_gain: float = Field(
        0.001, ge=0, description="A child's gain below this share of its parent's score counts as next to nothing."
    )
    stagnation_after: int = Field(
        4,
        ge=0,
        description="A branch whose last N finished nodes brought no gain is stagnant: its best node is evolved or fused with other branches' best (0 = never).",
    )
    fuse_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Share of stagnation moves that fuse (the rest evolve), when another branch exists.",
    )
    fuse_parents: int = Field(
        3, ge=2, description="Most nodes a fuse combines: the stagnant branch's best and the best of other branches."
    )
    horizon_nodes: int = Field(
        200,
        gt=0,
        description="With neither a time nor an iteration budget, the exploration decays over this many nodes.",
    )

    @model_validator(mode="after")
    def _exploit_order(self) -> MCGSConfig:
        if self.exploit_full <= self.exploit_start:
            raise ValueError("exploit_full must be larger than exploit_start")
        return self


class SearchConfig(_Section):
    policy: str = Field("mcgs", description="Search policy: mcgs (Monte Carlo graph search), or greedy.")
    num_drafts: int = Field(3, ge=1, description="Independent drafts before improving starts.")
    small_holdout_rows: int = Field(
        200,
        ge=0,
        description="Below this many holdout rows, nodes are ranked by the pooled score: holdout and out-of-fold scores weighted by their rows (0: never).",
    )
    max_debug_depth: int = Field(2, ge=0, description="Debug attempts allowed along one broken lineage.")
    debug_probability: float = Field(0.7, ge=0, le=1, description="Chance to debug a broken leaf when one is eligible.")
    draft_every: int = Field(6, ge=0, description="Every N-th iteration is a fresh draft (0 = never).")
    fuse_every: int = Field(
        5,
        ge=0,
        description="Blend the predictions of the best node of each branch whenever that member set is new, at least N nodes after the last blend (0 = never blend).",
    )
    fuse_size: int = Field(
        5, ge=2, description="Most nodes one blend averages (the best node of each of the best branches)."
    )
    seed: int = Field(0, description="Seed of the policy's random choices.")
    workers: int = Field(
        1,
        ge=1,
        description="Workers proposing and running nodes at once on this run (--workers), each script pinned to its own share of the CPUs.",
    )
    ray: str | None = Field(
        None,
        description="Run the workers' scripts on a Ray cluster (--ray): auto (this machine's cluster, else a local instance) or its address; None: on this machine.",
    )
    max_same_failures: int = Field(
        25,
        ge=2,
        description="Stop a run whose last N nodes all failed the same way, or produced no code (after the brain's safest pipeline failed that way too).",
    )
    evidence_reruns: int = Field(
        2,
        ge=0,
        description="Re-runs with other seeds a node needs before it becomes the best when it beats the best by less than the noise margin (0 = promote on the holdout score alone).",
    )
    evidence_share: float = Field(
        0.25,
        gt=0,
        le=1,
        description="A near tie's re-runs are made only when they cost at most this share of the search's time (or nodes) left; otherwise the candidate stays behind the best.",
    )
    evidence_z: float = Field(
        1.0, ge=0, description="The noise margin, in units of the task's seed spread (the noise floor)."
    )
    assumed_noise: float = Field(
        0.002,
        ge=0,
        description="The noise floor assumed until re-runs measure it, as a share of the best node's score.",
    )
    row_samples: bool = Field(
        True,
        description="On a table with more training rows than sample_above_rows, search on nested random samples of them first: drafts on a sample the time allows, the best of each size run again on sample_factor times more rows (successive halving); the final refit uses every row.",
    )
    sample_above_rows: int = Field(
        200_000, ge=1, description="Training rows above which the search samples them (row_samples)."
    )
    sample_min_rows: int = Field(50_000, ge=1, description="The smallest row sample the search trains on.")
    sample_factor: int = Field(
        4,
        ge=2,
        description="How many times more rows each larger sample holds, and how many nodes of one size compete for each promotion.",
    )
    stop_on_convergence: bool = Field(
        False,
        description="End the run early once the search has converged (see convergence_window); --stop-on-convergence.",
    )
    convergence_window: int = Field(
        8, ge=2, description="Converged: this many scored nodes in a row each gained less than the noise floor."
    )
    convergence_min_scored: int = Field(20, ge=1, description="Fewest scored nodes before a run may end as converged.")
    mcgs: MCGSConfig = MCGSConfig()
