"""The token and cost ledger: one record per LLM attempt, totals per model.

Records are plain dicts so they can go straight into the run journal
(``Ledger(sink=lambda rec: events.llm_call(journal, rec))``, mlguild.rundir.events) and come back from it on
resume (``Ledger.from_records(journal)``), which is what lets a run budget survive restarts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ..core.vocabulary import Event
from .prices import price_of

# The fields of one record, in the order the Router writes them.
FIELDS = (
    "model",
    "purpose",
    "node",
    "attempt",
    "outcome",
    "input_tokens",
    "prompt_cache_tokens",
    "prompt_cache_write_tokens",
    "output_tokens",
    "cost_usd",
    "cost_known",
    "latency_s",
    "finish_reason",
    "error",
)


@dataclass
class ModelTotals:
    """What one model has cost the run so far. Cache hits are counted, but their tokens are not:
    a cached reply was paid for once, by the call that filled the cache."""

    calls: int = 0  # attempts that reached the model (ok or failed), cache hits excluded
    ok: int = 0
    failed: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    prompt_cache_tokens: int = 0  # of input_tokens, read from the provider's prompt cache
    prompt_cache_write_tokens: int = 0  # of input_tokens, written into it (the first request of a prefix)
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True

    def add(self, rec: dict[str, Any]) -> None:
        if rec.get("outcome") == "cache_hit":
            self.cache_hits += 1
            return
        self.calls += 1
        if rec.get("outcome") == "ok":
            self.ok += 1
        else:
            self.failed += 1
        self.input_tokens += int(rec.get("input_tokens") or 0)
        self.prompt_cache_tokens += int(rec.get("prompt_cache_tokens") or 0)
        self.prompt_cache_write_tokens += int(rec.get("prompt_cache_write_tokens") or 0)
        self.output_tokens += int(rec.get("output_tokens") or 0)
        self.cost_usd += float(rec.get("cost_usd") or 0.0)
        self.cost_known = self.cost_known and bool(rec.get("cost_known", True))


class Ledger:
    """Receives records, keeps totals, forwards each record to ``sink`` (e.g. the journal).

    A Ledger is callable, so it can be passed anywhere a record callback is expected.
    """

    def __init__(self, sink: Callable[[dict[str, Any]], Any] | None = None):
        self.sink = sink
        self.by_model: dict[str, ModelTotals] = {}
        # The same totals by what the requests were for ("review", "improve"; a purpose's
        # first word: "improve:diff_retry" counts as "improve"), so a run can see what each use costs.
        self.by_purpose: dict[str, ModelTotals] = {}
        self._lock = threading.Lock()  # several workers' requests finish at once

    @staticmethod
    def make_record(
        model: str,
        *,
        outcome: str,
        attempt: int,
        purpose: str = "",
        node: str = "",
        input_tokens: int = 0,
        prompt_cache_tokens: int = 0,
        prompt_cache_write_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float = 0.0,
        latency_s: float = 0.0,
        finish_reason: str = "",
        error: str = "",
    ) -> dict[str, Any]:
        """One attempt, as a flat JSON-ready dict. ``outcome`` is "ok", "cache_hit" or the error
        class name; ``cost_known`` is False when the price table does not know the model."""
        return {
            "model": model,
            "purpose": purpose,
            "node": node,
            "attempt": attempt,
            "outcome": outcome,
            "input_tokens": int(input_tokens),
            "prompt_cache_tokens": int(prompt_cache_tokens),
            "prompt_cache_write_tokens": int(prompt_cache_write_tokens),
            "output_tokens": int(output_tokens),
            "cost_usd": round(float(cost_usd), 8),
            "cost_known": price_of(model) is not None,
            "latency_s": round(float(latency_s), 4),
            "finish_reason": finish_reason,
            "error": error[:500],
        }

    def record(self, rec: dict[str, Any]) -> None:
        """Count one record and forward it to the sink. The sink runs first: if writing the
        journal fails, the totals do not claim a call the run has no record of."""
        with self._lock:
            if self.sink is not None:
                self.sink(dict(rec))
            self._count(rec)

    __call__ = record

    def _count(self, rec: dict[str, Any]) -> None:
        self.by_model.setdefault(rec["model"], ModelTotals()).add(rec)
        purpose = str(rec.get("purpose") or "").split(":", 1)[0] or "other"
        self.by_purpose.setdefault(purpose, ModelTotals()).add(rec)

    @classmethod
    def from_records(
        cls, records: Iterable[dict[str, Any]], sink: Callable[[dict[str, Any]], Any] | None = None
    ) -> Ledger:
        """Rebuild totals from earlier records (journal records of type ``llm_call``, or bare
        records); ``sink`` receives only records added from now on, so nothing is journaled twice."""
        ledger = cls(sink=sink)
        for rec in records:
            if "type" in rec and rec["type"] != Event.LLM_CALL:
                continue
            if "model" in rec:
                ledger._count(rec)
        return ledger

    @property
    def total_tokens(self) -> int:
        return sum(t.input_tokens + t.output_tokens for t in self.by_model.values())

    @property
    def total_cost_usd(self) -> float:
        return sum(t.cost_usd for t in self.by_model.values())

    @property
    def cost_known(self) -> bool:
        return all(t.cost_known for t in self.by_model.values())

    def totals(self) -> dict[str, dict[str, Any]]:
        """Per-model totals as plain dicts (for JSON, dashboards)."""
        return {model: asdict(t) for model, t in sorted(self.by_model.items())}

    def summary(self) -> str:
        """A few human-readable lines for ``mlguild status``."""
        if not self.by_model:
            return "LLM: no calls"
        lines = []
        for model, t in sorted(self.by_model.items()):
            cost = f"${t.cost_usd:.4f}" if t.cost_known else f"${t.cost_usd:.4f} (price unknown)"
            cache = [f"{t.prompt_cache_tokens:,} from the prompt cache"] if t.prompt_cache_tokens else []
            cache += (
                [f"{t.prompt_cache_write_tokens:,} written to the prompt cache"] if t.prompt_cache_write_tokens else []
            )
            from_cache = f" ({', '.join(cache)})" if cache else ""
            lines.append(
                f"  {model}: {t.calls} calls ({t.failed} failed, {t.cache_hits} cached), "
                f"{t.input_tokens:,} in{from_cache} / {t.output_tokens:,} out tokens, {cost}"
            )
        mark = "" if self.cost_known else " + unknown"
        head = f"LLM: {self.total_tokens:,} tokens, ${self.total_cost_usd:.4f}{mark}"
        return "\n".join([head, *lines])
