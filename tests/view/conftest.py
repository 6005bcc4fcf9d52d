"""Fixtures of the view tests: a recorded multi-worker run made by the real CLI, a real
dashboard server on a free localhost port, and Debian's headless chromium driven by
Playwright (never a browser Playwright downloads). Screenshots go to ``screenshots/`` at the
repository root, or ``$MLGUILD_SCREENSHOTS``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_task

CHROMIUM = Path("/usr/bin/chromium")
# What a headless browser needs here: no sandbox (tests may run as root), and no calls home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(os.environ.get("MLGUILD_SCREENSHOTS", Path(__file__).parents[2] / "screenshots"))


def record_run(runs: Path, run_id: str, workers: int = 2, iterations: int = 8) -> Path:
    """A real run, made by `mlguild run --dry-run` in a subprocess: a regression task, so the
    scripted brain's nodes score differently, with ``workers`` workers."""
    task = make_task(runs.parent / f"task-{run_id}", n=120, task_type="regression", metric="rmse")
    env = {**os.environ, "MLGUILD_HOME": str(runs.parent / "home")}
    subprocess.run(
        [sys.executable, "-m", "mlguild", "run", str(task), "--dry-run", "--workers", str(workers)]
        + ["--iterations", str(iterations), "--sandbox", "local", "--runs-dir", str(runs), "--run-id", run_id],
        check=True,
        capture_output=True,
        env=env,
        timeout=240,
    )
    return runs / run_id


@pytest.fixture(scope="package")
def recorded(tmp_path_factory) -> Path:
    """The runs folder holding one recorded two-worker run, ``rec``."""
    runs = tmp_path_factory.mktemp("view") / "runs"
    runs.mkdir()
    record_run(runs, "rec")
    return runs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    def __init__(self, runs: Path):
        import uvicorn

        from mlguild.view.server import create_app

        self.runs = runs
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(runs), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the dashboard server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="package")
def served(tmp_path_factory, recorded) -> Iterator[Served]:
    """A live dashboard over a copy of the recorded runs (tests append to its journals)."""
    pytest.importorskip("starlette")
    runs = tmp_path_factory.mktemp("served") / "runs"
    shutil.copytree(recorded, runs, symlinks=True)
    with Served(runs) as server:
        yield server


@pytest.fixture(scope="package")
def browser():
    """Debian's chromium, headless, driven by Playwright through its executable path."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium: apt-get install chromium (.ci/run does)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")  # 7,000 not 7.000
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    try:
        yield page
    finally:
        context.close()


def screenshot_path(name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / f"{name}.png"


def screenshot(page, name: str) -> Path:
    """A full-page PNG of ``page``, kept for a person to look at."""
    path = screenshot_path(name)
    page.screenshot(path=str(path), full_page=True)
    return path
