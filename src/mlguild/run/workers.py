"""Several workers on one run: each proposes and runs nodes while the others do.

A worker is a thread of the run's process that calls the loop's ``next_node`` until the
budget ends: the policy's choice and every change to the graph, the journal, the memory and
the pools happen under the session's lock (one writer per file), while the proposal (an LLM
request) and the script (a sandboxed process) run outside it. Each worker's scripts are
pinned to their own share of the CPUs, with the thread count to match, so two scripts do not
fight over one core. The journal stays the single source of truth: a kill of the process
loses only the nodes in flight, which a resume runs again; a worker whose script is killed
records that node as failed and goes on.

With one worker this is the plain loop; the Ray form (mlguild.run.ray_workers) runs the same
``next_node`` and only sends the scripts elsewhere.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import NoReturn

from ..core.errors import BudgetExhausted

_JOIN_S = 0.2  # how often the main thread wakes to hear a Ctrl-C while the workers work


def current_worker() -> int:
    """The number of the worker whose thread calls this (1 for the main thread, which is
    the only worker of a one-worker run): the journal and the views say who ran a node."""
    name = threading.current_thread().name
    return int(name.rsplit("-", 1)[1]) if name.startswith("mlguild-worker-") else 1


def cpu_sets(count: int, cpus: list[int] | None = None) -> list[tuple[int, ...]]:
    """``count`` disjoint, near-equal shares of ``cpus`` (default: those this process may
    use); with more workers than CPUs, one CPU each, shared round-robin."""
    cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    if count >= len(cpus):
        return [(cpus[k % len(cpus)],) for k in range(count)]
    base, extra = divmod(len(cpus), count)
    shares, start = [], 0
    for k in range(count):
        size = base + (1 if k < extra else 0)
        shares.append(tuple(cpus[start : start + size]))
        start += size
    return shares


def run_workers(next_node: Callable[[tuple[int, ...]], object], count: int, interrupt: Callable[[], None]) -> NoReturn:
    """Run ``count`` workers, each calling ``next_node(its CPUs)``, until the budget ends
    (raises BudgetExhausted once every worker has finished its last node), the user
    interrupts (``interrupt()`` stops the scripts running, whose nodes are left unfinished
    for a resume; then KeyboardInterrupt), or a worker hits an error that stops the run
    (raised here)."""
    shares = cpu_sets(count)
    stop = threading.Event()
    errors: list[BaseException] = []

    def work(share: tuple[int, ...]) -> None:
        try:
            while not stop.is_set():
                next_node(share)
        except BaseException as exc:  # raised again in the main thread, below
            errors.append(exc)
            stop.set()

    threads = [
        threading.Thread(target=work, args=(share,), name=f"mlguild-worker-{k + 1}", daemon=True)
        for k, share in enumerate(shares)
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(_JOIN_S)
    except KeyboardInterrupt:
        stop.set()
        interrupt()
        for thread in threads:
            thread.join()
        raise
    # A budget that ended is the normal end; any other error is the run's.
    for exc in errors:
        if not isinstance(exc, BudgetExhausted):
            raise exc
    raise errors[0] if errors else BudgetExhausted("time")
