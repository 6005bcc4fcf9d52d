"""The dashboard's web server: a Starlette app over a folder of runs, read-only.

It serves the page and its vendored scripts from ``view/static`` (nothing from the network),
JSON built by ``view.runs``, and a run's plain files. What it may serve is bounded twice:
a run is named by a plain id that must be a run folder directly inside the runs folder, and
a file by a path that must stay inside that run after every link is resolved and never
enters ``sealed/`` (the labels the scores are computed on). Everything else is refused
with 403 or 404 before any file is opened.

The page stays live by polling ``/api/runs/ID/version``, a token of the journal's size and
time, and fetching the run again when it changes.
"""

from __future__ import annotations

import re
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .runs import JOURNAL, journal_version, list_runs, load_run, node_detail, pools, run_detail, run_summary

STATIC = Path(__file__).parent / "static"
SEALED = "sealed"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# The browser may cache the vendored assets, never the data: a run changes while it is watched.
_NO_STORE = {"Cache-Control": "no-store"}


LOCAL_NAMES = ["127.0.0.1", "localhost", "[::1]", "::1"]


def create_app(runs_dir: Path, host: str = "127.0.0.1") -> Starlette:
    """The dashboard for the runs directly inside ``runs_dir``, listening on ``host``.

    Requests must name this machine (or ``host``) in their Host header: a web page elsewhere
    that rebinds its own name to 127.0.0.1 cannot read the runs through the browser."""
    root = runs_dir.expanduser().resolve()

    def run_path(request: Request) -> Path:
        run_id = request.path_params["run_id"]
        if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
            raise HTTPException(404, "no such run")
        path = root / run_id
        if path.is_symlink() or not (path / JOURNAL).is_file() or path.resolve().parent != root:
            raise HTTPException(404, "no such run")
        return path

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers=_NO_STORE)

    async def runs(request: Request) -> Response:
        return JSONResponse([run_summary(v) for v in list_runs(root)], headers=_NO_STORE)

    async def run(request: Request) -> Response:
        return JSONResponse(run_detail(load_run(run_path(request))), headers=_NO_STORE)

    async def version(request: Request) -> Response:
        return JSONResponse({"version": journal_version(run_path(request))}, headers=_NO_STORE)

    async def node(request: Request) -> Response:
        view = load_run(run_path(request))
        try:
            return JSONResponse(node_detail(view, request.path_params["node_id"]), headers=_NO_STORE)
        except KeyError:
            raise HTTPException(404, "no such node") from None

    async def run_pools(request: Request) -> Response:
        return JSONResponse(pools(load_run(run_path(request))), headers=_NO_STORE)

    async def run_file(request: Request) -> Response:
        path = run_path(request)
        target = safe_file(path, request.path_params["path"])
        if not target.is_file():
            raise HTTPException(404, "no such file")
        return FileResponse(target, headers=_NO_STORE)

    routes = [
        Route("/", index),
        Route("/api/runs", runs),
        Route("/api/runs/{run_id}", run),
        Route("/api/runs/{run_id}/version", version),
        Route("/api/runs/{run_id}/pools", run_pools),
        Route("/api/runs/{run_id}/nodes/{node_id}", node),
        Route("/runs/{run_id}/files/{path:path}", run_file),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    wildcard = host in ("0.0.0.0", "::", "")
    allowed = ["*"] if wildcard else sorted({*LOCAL_NAMES, host})
    return Starlette(routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed)])


def safe_file(run: Path, relative: str) -> Path:
    """The file ``relative`` names inside ``run``; HTTPException 403 for a path that leaves the
    run (``..``, an absolute path, a link pointing out) or enters its ``sealed/`` folder."""
    parts = Path(relative).parts
    if not parts or Path(relative).is_absolute() or ".." in parts or "\\" in relative:
        raise HTTPException(403, "outside the run")
    base = run.resolve()
    target = (base / relative).resolve()
    try:
        inside = target.relative_to(base)
    except ValueError:
        raise HTTPException(403, "outside the run") from None
    if (inside.parts and inside.parts[0] == SEALED) or parts[0] == SEALED:
        raise HTTPException(403, "sealed files are never served")
    return target


def serve(runs_dir: Path, host: str, port: int) -> None:
    """Serve the dashboard until interrupted."""
    import uvicorn

    uvicorn.run(create_app(runs_dir, host), host=host, port=port, log_level="warning")
