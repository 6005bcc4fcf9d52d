"""The configuration sections of what keeps scripts apart from sealed data and from the
machine: the firewall's splits (``firewall:``) and the sandbox's limits (``sandbox:``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..core.execution import (
    DEFAULT_DISK_MB,
    DEFAULT_FSIZE_MB,
    DEFAULT_MAX_FILES,
    DEFAULT_MEMORY_MB,
    DEFAULT_NOFILE,
    DEFAULT_OUTPUT_BYTES,
    DEFAULT_RUN_AS_UID,
    DEFAULT_TIMEOUT_S,
    DEFAULT_TMP_MB,
    DEFAULT_TREE_MEMORY_MB,
    DEFAULT_TREE_PROCS,
    Limits,
)
from .base import _Section


class FirewallConfig(_Section):
    holdout_fraction: float = Field(0.2, gt=0.0, lt=0.9, description="Share of labelled rows sealed as the holdout.")
    max_holdout_rows: int = Field(50_000, gt=0, description="Cap on holdout rows, so huge tasks score fast.")
    seed: int = Field(0, description="Seed of the stratified holdout split.")
    holdout: Literal["auto", "random"] = Field(
        "auto",
        description="auto: the latest labelled rows when the task names a time_column, else a seeded random split; random: always a random split (a warning says so on time-ordered data).",
    )
    confirm_fraction: float = Field(
        0.1,
        ge=0.0,
        lt=0.5,
        description="Share of labelled rows sealed as the confirmation split, scored once after the search to measure the selection bias (0: off); raised to the holdout's row count when it gives fewer, except on rows ordered in time (a smaller split is noisier than the holdout and need not be the closer estimate of the test score).",
    )
    confirm_min_rows: int = Field(
        150,
        ge=1,
        description="A confirmation split smaller than this many rows is skipped (the run says so): too few rows to confirm anything.",
    )
    parquet_above_mb: float = Field(
        64,
        ge=0,
        description="A training file larger than this (MB) also gets Parquet copies of its training, holdout and test files in the workspace, typed and narrowed (train.parquet beside train.csv), which the recipes read instead.",
    )


class SandboxConfig(_Section):
    kind: str = Field(
        "auto",
        description="Sandbox layer: auto (bwrap when usable; without it, local only for the recipe and scripted brains, and the llm and hybrid brains refuse to start), local or bwrap.",
    )
    strict: bool = Field(False, description="Refuse to run when only the weaker (local) layer is available.")
    gpu: bool | None = Field(None, description="Pass GPU device nodes into the namespace layer (None = when present).")
    script_timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, description="Wall-clock limit for one script.")
    tree_memory_mb: int = Field(
        DEFAULT_TREE_MEMORY_MB, gt=0, description="Kill a script whose whole process tree uses more RSS."
    )
    memory_mb: int | None = Field(
        DEFAULT_MEMORY_MB, description="Per-process address-space limit (RLIMIT_AS); off by default."
    )
    fsize_mb: int = Field(DEFAULT_FSIZE_MB, gt=0, description="Largest single file a script may write.")
    nofile: int = Field(DEFAULT_NOFILE, gt=0, description="Open-file limit for a script.")
    output_bytes: int = Field(
        DEFAULT_OUTPUT_BYTES, ge=1024, description="Stdout/stderr kept per stream (head and tail)."
    )
    threads: int = Field(0, ge=0, description="Cores a script may use (0 = all of this machine's).")
    disk_mb: int = Field(
        DEFAULT_DISK_MB, gt=0, description="Cap on the bytes a script writes under its node directory."
    )
    max_files: int = Field(
        DEFAULT_MAX_FILES, gt=0, description="Cap on the files a script creates under its node directory."
    )
    tree_procs: int = Field(
        DEFAULT_TREE_PROCS, gt=0, description="Cap on live processes in a script's tree (fork bombs)."
    )
    tmp_mb: int = Field(
        DEFAULT_TMP_MB, gt=0, description="Size of the namespace layer's private /tmp and /dev/shm, each."
    )
    run_as_uid: int | None = Field(
        DEFAULT_RUN_AS_UID,
        description="Unprivileged uid scripts run as when the agent is root (None = never drop).",
    )

    def limits(self, timeout_s: float) -> Limits:
        """The sandbox limits of one script that may run ``timeout_s`` seconds."""
        return Limits(
            timeout_s=timeout_s,
            tree_memory_mb=self.tree_memory_mb,
            memory_mb=self.memory_mb,
            fsize_mb=self.fsize_mb,
            nofile=self.nofile,
            output_bytes=self.output_bytes,
            disk_mb=self.disk_mb,
            max_files=self.max_files,
            tree_procs=self.tree_procs,
            tmp_mb=self.tmp_mb,
            run_as_uid=self.run_as_uid,
        )
