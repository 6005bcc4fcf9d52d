"""The Router: one LLM over a fallback chain, and the policy that survives real services.

Per call: check the run budget; answer from the cache if any model in the chain has this
exact request cached; otherwise try the models in order. On one model, transient failures
and rate limits are retried with capped exponential backoff and full jitter (a server's
Retry-After is honoured, capped); unusable replies are retried a couple of times. When a
model runs out of retries the next model is tried. A QuotaExhausted parks that model — for
the rest of the run, or ``park_s`` seconds — and only when every model is parked does the
run stop, with AllModelsExhausted. AuthError and InvalidRequest stop at once: retrying or
falling back would hide a mistake a person has to fix.

Every attempt (ok, failed, or a cache hit) is written to the ledger. Sleep, clock and the
jitter's random source are injectable, so tests exercise hour-long waits in microseconds.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ..core.errors import BudgetExhausted
from .base import LLM, Completion, Message
from .cache import ReplyCache
from .errors import AllModelsExhausted, BadResponse, LLMError, QuotaExhausted, RateLimited, TransientError
from .ledger import Ledger
from .registry import make_llm

if TYPE_CHECKING:
    from ..config.llm import LLMConfig


class _Labels(TypedDict):
    """What a call is for, passed on to the model and to the ledger."""

    purpose: str
    node: str


class Router:
    """An LLM made of ``llms`` tried in order. Not thread-safe: one Router per worker."""

    def __init__(
        self,
        llms: Sequence[LLM],
        settings: LLMConfig | None = None,
        *,
        ledger: Ledger | None = None,
        cache: ReplyCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        seed: int | None = None,
        **changes: Any,
    ):
        """``settings``: the ``llm:`` section of the configuration (``LLMConfig``, whose
        fields say what each does: retries, backoff, parking, token and cost budgets);
        ``changes`` override some of its fields (e.g. ``retries=0``). The budgets are checked
        against ``ledger`` (which a resumed run rebuilds from its journal) before every call;
        ``cache`` keeps replies; ``sleep``, ``clock`` and ``seed`` make waits testable.
        """
        from ..config.llm import LLMConfig  # pydantic: only when a Router is built

        # Validated: an unknown or invalid change fails here, not on the first retry.
        settings = LLMConfig.model_validate({**(settings or LLMConfig()).model_dump(), **changes})
        if not llms:
            raise ValueError("a Router needs at least one model")
        self.llms = list(llms)
        self.settings = settings
        self.retries = settings.retries
        self.bad_response_retries = settings.bad_response_retries
        self.backoff_base_s = settings.backoff_base_s
        self.backoff_cap_s = settings.backoff_cap_s
        self.retry_after_cap_s = settings.retry_after_cap_s
        self.park_s = settings.park_s
        self.max_tokens_total = settings.max_tokens_total
        self.max_cost_usd = settings.max_cost_usd
        self.ledger = ledger if ledger is not None else Ledger()
        self.cache = cache
        self._sleep = sleep
        self._clock = clock
        self._rng = random.Random(seed)
        self._parked: dict[str, tuple[float | None, str]] = {}  # model -> (until (None: for good), why)

    @property
    def model(self) -> str:
        """The model the next call tries first (the first one not parked)."""
        usable = [m.model for m in self.llms if not self.is_parked(m.model)]
        return usable[0] if usable else self.llms[0].model

    def is_parked(self, model: str) -> bool:
        if model not in self._parked:
            return False
        until, _ = self._parked[model]
        if until is not None and self._clock() >= until:
            del self._parked[model]  # a timed park has run out: the model may be tried again
            return False
        return True

    @property
    def parked(self) -> dict[str, str]:
        """Currently parked models and why."""
        return {m: why for m, (_, why) in list(self._parked.items()) if self.is_parked(m)}

    def complete(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float = 0.2,
        timeout_s: float = 300,
        purpose: str = "",
        node: str = "",
    ) -> Completion:
        """A Completion from the first model that can give one.

        Raises BudgetExhausted("llm_tokens" | "llm_cost") before calling when a budget is
        spent (a call that crosses a budget is still returned: it was paid for);
        AllModelsExhausted when every model is parked; AuthError / InvalidRequest at once;
        otherwise, when every model ran out of retries, the last model's error.
        """
        self._check_budget()
        labels = _Labels(purpose=purpose, node=node)
        if self.cache is not None:
            for llm in self.llms:  # parked models too: a stored reply costs nothing
                hit = self.cache.get(llm.model, messages, max_tokens, temperature, node)
                if hit is not None:
                    self._record(llm.model, 0, "cache_hit", completion=hit, **labels)
                    return hit
        last: LLMError | None = None
        for llm in self.llms:
            if self.is_parked(llm.model):
                continue
            try:
                completion = self._on_one_model(llm, messages, max_tokens, temperature, timeout_s, labels)
            except QuotaExhausted as exc:
                self._park(llm.model, exc)
                last = exc
                continue
            except (TransientError, RateLimited, BadResponse) as exc:
                last = exc  # out of retries on this model; the next one may be healthy
                continue
            if self.cache is not None:
                self.cache.put(messages, max_tokens, temperature, completion, node)
            return completion
        if all(self.is_parked(m.model) for m in self.llms):
            raise AllModelsExhausted(self.parked, self._next_unpark_in()) from last
        assert last is not None  # some model was usable, so it was tried and failed
        raise last

    def _on_one_model(
        self,
        llm: LLM,
        messages: list[Message],
        max_tokens: int,
        temperature: float,
        timeout_s: float,
        labels: _Labels,
    ) -> Completion:
        """Attempts on one model until it answers or runs out of retries (then its error is raised)."""
        transient = bad = 0
        attempt = 0
        while True:
            attempt += 1
            started = time.monotonic()
            try:
                completion = llm.complete(
                    messages, max_tokens=max_tokens, temperature=temperature, timeout_s=timeout_s, **labels
                )
            except Exception as exc:
                error = exc.message if isinstance(exc, LLMError) else str(exc)
                self._record(
                    llm.model, attempt, type(exc).__name__, error=error, latency_s=time.monotonic() - started, **labels
                )
                if isinstance(exc, BadResponse):
                    bad += 1
                    if bad > self.bad_response_retries:
                        raise
                    delay = self._backoff(bad)
                elif isinstance(exc, (TransientError, RateLimited)):
                    transient += 1
                    if transient > self.retries:
                        raise
                    advised = exc.retry_after_s if isinstance(exc, RateLimited) else None
                    delay = min(advised, self.retry_after_cap_s) if advised is not None else self._backoff(transient)
                else:
                    raise  # quota, auth, invalid request, or a bug: retrying the same model cannot help
                self._sleep(delay)
                continue
            self._record(llm.model, attempt, "ok", completion=completion, **labels)
            return completion

    def _backoff(self, n: int) -> float:
        # Full jitter: workers that failed together do not retry together.
        return self._rng.uniform(0.0, min(self.backoff_cap_s, self.backoff_base_s * 2 ** (n - 1)))

    def park(self, model: str, why: str) -> None:
        """Skip ``model`` for the rest of this session (a local server that refused a
        connection before the run began: retrying it on every call would only wait)."""
        self._parked[model] = (None, why)

    def _park(self, model: str, exc: QuotaExhausted) -> None:
        until = None if self.park_s is None else self._clock() + self.park_s
        span = "for the rest of the run" if until is None else f"for {self.park_s:.0f}s"
        reason = " ".join(exc.message.split())[:300]
        self._parked[model] = (until, f"parked {span} after: {reason}")

    def _next_unpark_in(self) -> float | None:
        ends = [until for until, _ in self._parked.values() if until is not None]
        return max(0.0, min(ends) - self._clock()) if ends else None

    def _check_budget(self) -> None:
        if self.max_tokens_total is not None and self.ledger.total_tokens >= self.max_tokens_total:
            raise BudgetExhausted("llm_tokens")
        if self.max_cost_usd is not None and self.ledger.total_cost_usd >= self.max_cost_usd:
            raise BudgetExhausted("llm_cost")

    def _record(
        self,
        model: str,
        attempt: int,
        outcome: str,
        *,
        completion: Completion | None = None,
        error: str = "",
        latency_s: float = 0.0,
        purpose: str = "",
        node: str = "",
    ) -> None:
        c = completion
        self.ledger.record(
            Ledger.make_record(
                model,
                outcome=outcome,
                attempt=attempt,
                purpose=purpose,
                node=node,
                input_tokens=c.input_tokens if c else 0,
                prompt_cache_tokens=c.prompt_cache_tokens if c else 0,
                prompt_cache_write_tokens=c.prompt_cache_write_tokens if c else 0,
                output_tokens=c.output_tokens if c else 0,
                cost_usd=c.cost_usd if c else 0.0,
                latency_s=c.latency_s if c else latency_s,
                finish_reason=c.finish_reason if c else "",
                error=error,
            )
        )


CACHE_DIR = "llm_cache"


def build_router(
    config: LLMConfig,
    *,
    run_dir: str | Path | None = None,
    sink: Callable[[dict[str, Any]], Any] | None = None,
    records: Iterable[dict[str, Any]] = (),
    **overrides: Any,
) -> Router:
    """The Router for a run: adapters for ``config.models`` (failing now on a missing key or
    SDK), a ledger rebuilt from ``records`` (earlier journal records, on resume) that forwards
    new records to ``sink``, and a cache at ``<run_dir>/llm_cache``. ``overrides`` go to the
    Router (tests pass ``sleep``/``clock``)."""
    if not config.models:
        from ..core.errors import ConfigError

        raise ConfigError("no LLM model is configured", "pass --model provider/name (e.g. --model openai/gpt-4.1)")
    llms = [make_llm(model) for model in config.models]
    cache = ReplyCache(Path(run_dir) / CACHE_DIR) if config.cache and run_dir is not None else None
    return Router(llms, config, ledger=Ledger.from_records(records, sink=sink), cache=cache, **overrides)
