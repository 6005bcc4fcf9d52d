"""`mlguild serve` and `mlguild report`: the dashboard over a runs folder, a run's report."""

from __future__ import annotations

from pathlib import Path

import typer

from ..core.errors import MlguildError
from ..rundir.folder import check_run_dir
from .common import console, default_runs_dir, plain, resolve_run, user_errors

WEB_FIX = "install the dashboard's extra: pip install -e '.[web]' (or pip install 'mlguild[web]')"


def serve(
    runs_dir: Path = typer.Argument(None, help="The runs folder to show (default ./runs or $MLGUILD_RUNS)."),
    port: int = typer.Option(8765, help="Port to listen on."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on (default: this machine only)."),
) -> None:
    """A live web dashboard of the runs in a folder: the search graph, scores, failures, costs, nodes."""
    with user_errors():
        try:
            from ..view.server import serve as serve_app
        except ImportError as exc:
            raise MlguildError(f"the dashboard needs starlette and uvicorn ({exc})", WEB_FIX) from None
        folder = (runs_dir or default_runs_dir()).expanduser()
        if not folder.is_dir():
            raise MlguildError(
                f"{folder} is not a folder of runs", "give the folder runs are written to, e.g. `mlguild serve runs`"
            )
        console.print(plain(f"serving {folder.resolve()} at http://{host}:{port}/  (Ctrl-C stops it)"))
        serve_app(folder, host, port)


def report(
    run: str | None = typer.Argument(None, help="Run directory (default: the latest)."),
    runs_dir: Path = typer.Option(None, help="Where runs are (default ./runs or $MLGUILD_RUNS)."),
) -> None:
    """Write the run's report.html (plots embedded, no network) and report.md summary."""
    from ..view.report import write_report

    with user_errors():
        path = resolve_run(run, runs_dir or default_runs_dir()).expanduser().absolute()
        check_run_dir(path)
        written = write_report(path)
        for file in written.files:
            console.print(plain(f"wrote {file}"))
        if written.note:
            console.print(f"[yellow]note:[/] {plain(written.note)}")
