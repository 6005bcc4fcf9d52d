"""A local stand-in for the Kaggle public API, speaking its real wire format.

Why this exists: tests drive the *real* ``kaggle.api.kaggle_api_extended.KaggleApi`` (kaggle 2.2.5,
kagglesdk 0.1.38) with nothing mocked inside the client. Its HTTP requests come here instead of
``https://api.kaggle.com``: the product builds every client with its endpoint replaced by ``KaggleServer.url``
(``client.http_client()._endpoint = url``), so the client posts to ``{url}/v1/{service}/{method}``.

What is served, as the client sends and parses it (camelCase JSON, enums by name, timestamps as
``YYYY-MM-DDTHH:MM:SSZ``):

- ``POST /v1/competitions.CompetitionApiService/ListCompetitions``   ``competitions_list``
- ``POST /v1/competitions.CompetitionApiService/ListDataFiles``      ``competition_list_files``
- ``POST /v1/competitions.CompetitionApiService/DownloadDataFiles``  ``competition_download_files``: a 302 to a
  signed-URL-like ``/storage/.../archive.zip`` on this server, which streams a zip built from the files
  (Content-Length, Last-Modified, ETag, Accept-Ranges and Range requests, as the client's resumable download uses).
- ``POST /v1/competitions.CompetitionApiService/StartSubmissionUpload``, then ``PUT`` of the file bytes to the
  returned ``createUrl`` (the Google Cloud Storage resumable-upload protocol ``upload_complete`` speaks: one PUT, or
  ``Content-Range`` chunks and ``bytes */N`` status queries answered with 308 + ``Range``), then
  ``POST .../CreateSubmission``                                       ``competition_submit``
- ``POST /v1/competitions.CompetitionApiService/ListSubmissions``    ``competition_submissions``
- ``POST /v1/competitions.CompetitionApiService/GetSubmission``      ``get_submission`` (the CLI's ``--wait`` poll)
- ``POST /v1/security.OAuthService/IntrospectToken``                 what ``authenticate()`` asks when an access token
  (``KAGGLE_API_TOKEN`` or ``~/.kaggle/access_token``) is present; with the legacy username/key it makes no request.

A competition's community material (``add_kernel``, ``add_topic``):

- ``POST /v1/kernels.KernelsApiService/ListKernels``                  ``kernels_list``: filters ``competition``,
  ``language``, ``kernelType``; ``sortBy`` (``VOTE_COUNT``, ``DATE_RUN``, ``DATE_CREATED``; anything else, e.g. the
  default ``HOTNESS``, as votes); ``page``/``pageSize`` (default 20) or ``pageToken``.
- ``POST /v1/kernels.KernelsApiService/GetKernel``                    ``kernels_pull``: ``{"metadata", "blob": {"source",
  "language", "kernelType", "slug"}}``; the client writes ``blob.source`` to ``<slug>.ipynb`` or ``<slug>.py``.
- ``POST /v1/competitions.CompetitionApiService/ListCompetitionTopics`` ``competition_list_topics``: ``sortBy``
  (``TOPIC_LIST_SORT_BY_TOP`` by votes, ``..._NEW``/``..._RECENT`` by date, else as listed), ``page`` of 20 topics,
  with ``totalCount``.
- ``POST /v1/competitions.CompetitionApiService/ListTopicMessages``   ``competition_list_topic_messages``: the topic's
  messages as a tree (``replies``), top level sorted by ``sortBy`` (``..._OLD``, ``..._NEW``, ``..._TOP``), ``pageSize``
  top-level messages (-1 or none: all).
- ``POST /v1/search.SearchApiService/ListEntities``                   ``search``: the kernels whose title contains
  ``filters.query`` (case-insensitive), when ``filters.documentTypes`` is empty or holds ``KERNEL``, with the owner's
  ``tier`` and the kernel's ``bestPublicScore``. Protobuf JSON leaves out default values, so a novice owner has no
  ``tier`` and a kernel without a score no ``bestPublicScore``, as on Kaggle.

What api.kaggle.com answers to ListKernels for a competition that does not exist is not known; the fake lists nothing
(the product asks ListCompetitions first).

Errors use the body api.kaggle.com sends, ``{"error": {"code", "message", "status", "details"}}``. kagglesdk only turns
a *top-level* ``code``/``message`` into its exception text, so with this (real) shape the client raises
``requests.HTTPError("403 Client Error: Forbidden for url: ...")`` and the message is only in the response body.
``error_style = "legacy"`` answers the older ``{"code", "message"}`` shape instead (then ``str(exc)`` is the message).

Client-side hygiene a test needs (the kaggle package reads these at import and on every client it builds):
``KAGGLE_CONFIG_DIR`` must point at an empty temp dir *before* ``kaggle`` is first imported (the config dir is a class
attribute computed, and created, at import; importing ``kaggle`` also runs ``authenticate()`` once on a plain client);
``KAGGLE_USERNAME``/``KAGGLE_KEY`` carry the legacy key, sent as HTTP basic auth; ``KAGGLE_API_TOKEN`` must be unset
and ``HOME`` must not hold ``~/.kaggle/access_token``, since either makes every request use ``Bearer`` instead.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import secrets
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

COMPETITIONS = "competitions.CompetitionApiService"
KERNELS = "kernels.KernelsApiService"
SEARCH = "search.SearchApiService"
OAUTH = "security.OAuthService"

# Message texts as Kaggle words them. The download one is verbatim from Kaggle's replies; the submit one follows it.
RULES_DOWNLOAD_MESSAGE = "You must accept this competition's rules before you'll be able to download files."
RULES_SUBMIT_MESSAGE = "You must accept this competition's rules before you'll be able to submit."
# Kaggle's own text (note the two spaces after the colon, as in the service's JSON replies).
DAILY_LIMIT_MESSAGE = (
    "Submission not allowed:  Your team has used its daily Submission allowance ({limit}) today, "
    "please try again tomorrow UTC ({hours:.1f} hours from now)."
)
NOT_FOUND_MESSAGE = "NotFound"
UNKNOWN_COMPETITION_FORBIDDEN_MESSAGE = "Permission 'competitions.participate' was denied"
UNAUTHENTICATED_MESSAGE = "Unauthenticated"
RATE_LIMIT_MESSAGE = "Too many requests. Please slow down and try again later."

# google.rpc status names api.kaggle.com puts next to the HTTP code.
_RPC_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    501: "UNIMPLEMENTED",
}

# HostSegment enum names (what ``competitions_list(category=...)`` sends) -> ApiCompetition.category text.
HOST_SEGMENTS = {
    "HOST_SEGMENT_FEATURED": "Featured",
    "HOST_SEGMENT_RESEARCH": "Research",
    "HOST_SEGMENT_RECRUITMENT": "Recruitment",
    "HOST_SEGMENT_GETTING_STARTED": "Getting Started",
    "HOST_SEGMENT_MASTERS": "Masters",
    "HOST_SEGMENT_PLAYGROUND": "Playground",
    "HOST_SEGMENT_COMMUNITY": "Community",
}

# Zip members get a fixed timestamp so the same files always make the same archive bytes (and ETag).
_ZIP_DATE_TIME = (2020, 1, 1, 0, 0, 0)


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _default_deadline() -> datetime:
    return _now() + timedelta(days=30)


def timestamp(dt: datetime) -> str:
    """A datetime as protobuf JSON writes a Timestamp: UTC, ``Z``, fraction only when non-zero.

    kagglesdk strips the ``Z`` and parses the rest with ``fromisoformat``, so the client ends up with a *naive*
    datetime in UTC. A naive input here is taken to be UTC already.
    """
    dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if dt.microsecond:
        text += f".{dt.microsecond // 1000:03d}" if dt.microsecond % 1000 == 0 else f".{dt.microsecond:06d}"
    return text + "Z"


def format_score(score: float) -> str:
    """Kaggle sends leaderboard scores as strings with five decimals, e.g. ``"0.78468"``."""
    return f"{score:.5f}"


@dataclass
class FakeCompetition:
    """One competition as the fake serves it.

    ``rules_accepted`` False makes download and submit answer 403 with Kaggle's message (listing files still works,
    as on Kaggle) and shows ``userHasEntered`` False. ``public_score`` (and ``private_score``) compute a score from
    the uploaded bytes when the submission is created; if it raises, the submission ends in ERROR with the exception
    text as ``errorDescription``. ``pending_polls`` is how many status polls (ListSubmissions or GetSubmission) show a
    new submission as PENDING before it turns COMPLETE (or ERROR). ``files_modified`` is the bundle's Last-Modified
    and each file's creationDate: bump it when changing ``files``, since the client skips a download whose local copy
    is not older.
    """

    slug: str
    title: str
    category: str = "Featured"
    deadline: datetime = field(default_factory=_default_deadline)
    evaluation_metric: str = "Area Under ROC Curve"
    description: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    rules_accepted: bool = True
    public_score: Callable[[bytes], float] | None = None
    pending_polls: int = 0
    private_score: Callable[[bytes], float] | None = None
    reward: str = "Knowledge"
    team_count: int = 0
    files_modified: datetime = field(default_factory=_now)

    @property
    def url(self) -> str:
        """The competition's web address, which is also what the API returns as its ``ref``."""
        return f"https://www.kaggle.com/competitions/{self.slug}"


@dataclass
class FakeKernel:
    """A public notebook or script of a competition. ``tier`` is its owner's UserAchievementTier name (NOVICE ...
    GRANDMASTER, STAFF); ``best_public_score`` None when it never made a submission. ``pull_status``: GetKernel answers
    this HTTP status instead (403, as for a kernel made private after it was listed; 429, a rate limit)."""

    ref: str  # owner/slug
    title: str
    competition: str
    source: str
    kernel_type: Literal["notebook", "script"] = "notebook"
    language: str = "python"
    author: str = ""  # the display name; the owner's user name when empty
    votes: int = 0
    last_run: datetime = field(default_factory=_now)
    tier: str = "NOVICE"
    best_public_score: float | None = None
    pull_status: int | None = None

    @property
    def owner(self) -> str:
        return self.ref.split("/", 1)[0]

    @property
    def slug(self) -> str:
        return self.ref.split("/", 1)[1]


@dataclass
class FakeMessage:
    """A message of a discussion topic. ``content`` is the HTML Kaggle renders; ``markdown`` what its author typed."""

    author: str
    posted: datetime
    markdown: str
    votes: int = 0
    content: str | None = None
    deleted: bool = False
    replies: list[FakeMessage] = field(default_factory=list)
    id: int = 0  # given by add_topic when 0


@dataclass
class FakeTopic:
    """A discussion topic of a competition: its messages, the opening one first, each with its replies."""

    id: int
    competition: str
    title: str
    author: str
    posted: datetime
    votes: int = 0
    messages: list[FakeMessage] = field(default_factory=list)
    sticky: bool = False


@dataclass
class Seen:
    """One request as it reached the server, for assertions. ``json`` is None when the body is not JSON."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    query: str = ""
    body_size: int = 0


@dataclass
class Upload:
    """A file sent to a ``createUrl``: the bytes the server keeps, whether or not a submission was made from them."""

    token: str
    slug: str
    file_name: str
    declared_length: int
    content: bytearray = field(default_factory=bytearray)
    complete: bool = False


class ApiError(Exception):
    """An error reply: HTTP status, message, and the google.rpc status and ErrorInfo reason Kaggle adds."""

    def __init__(
        self,
        code: int,
        message: str,
        rpc_status: str | None = None,
        reason: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.rpc_status = rpc_status or _RPC_STATUS.get(code, "UNKNOWN")
        self.reason = reason
        self.metadata = metadata or {}
        self.headers = headers or {}


class _Redirect(Exception):
    """Raised by an RPC whose answer is an HTTP redirect (the client follows it and reads the target)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


class KaggleServer:
    """A threaded HTTP server on 127.0.0.1 (free port) answering like api.kaggle.com. Use as a context manager.

    Configure per test by setting attributes before (or between) calls; all state is guarded by one lock since the
    server answers from several threads.

    - ``rate_limit_submits``: answer this many StartSubmissionUpload/CreateSubmission calls with 429 and
      ``Retry-After: retry_after`` before accepting (``competition_submit`` does not retry: the first 429 raises).
    - ``daily_submission_limit``: CreateSubmission beyond this many non-ERROR submissions in a competition on the
      current UTC day answers 400 with Kaggle's "daily Submission allowance" text (the upload itself still succeeds).
    - ``unknown_competition_status``: 404 (default) or 403, which is what Kaggle has been seen to answer for a
      mistyped slug ("Permission 'competitions.participate' was denied").
    - ``error_style``: ``"google"`` (api.kaggle.com's ``{"error": {...}}``) or ``"legacy"`` (``{"code", "message"}``).
    - ``access_token``: if set, ``Authorization: Bearer <it>`` is accepted too and IntrospectToken reports it active.
    """

    def __init__(self, username: str = "tester", key: str = "secret-key", *, access_token: str | None = None) -> None:
        self.username = username
        self.key = key
        self.access_token = access_token
        self.url = ""
        self.competitions: dict[str, FakeCompetition] = {}
        self.rate_limit_submits = 0
        self.rate_limit_kernel_lists = 0  # ListKernels calls answered 429 before listing
        self.kernels: dict[str, FakeKernel] = {}  # by ref, lower case
        self.topics: dict[int, FakeTopic] = {}
        self.retry_after = 1
        self.daily_submission_limit = 5
        self.unknown_competition_status = 404
        self.error_style: Literal["google", "legacy"] = "google"
        self.requests: list[Seen] = []
        self.submissions: dict[str, list[dict[str, Any]]] = {}
        self.uploads: dict[str, Upload] = {}
        self._lock = threading.RLock()
        self._download_tokens: dict[str, str] = {}
        self._next_competition_id = 10_000
        self._competition_ids: dict[str, int] = {}
        self._next_ref = 40_000_000
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------------------------------------- lifecycle

    def add(self, comp: FakeCompetition) -> None:
        """Registers (or replaces) a competition, keyed by its slug."""
        with self._lock:
            self.competitions[comp.slug] = comp
            self.submissions.setdefault(comp.slug, [])
            if comp.slug not in self._competition_ids:
                self._competition_ids[comp.slug] = self._next_competition_id
                self._next_competition_id += 1

    def add_kernel(self, kernel: FakeKernel) -> None:
        with self._lock:
            self.kernels[kernel.ref.lower()] = kernel

    def add_topic(self, topic: FakeTopic) -> None:
        with self._lock:
            self.topics[topic.id] = topic
            for n, message in enumerate(_walk(topic.messages)):
                message.id = message.id or topic.id * 1000 + n + 1

    def start(self) -> None:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        self._thread = threading.Thread(target=httpd.serve_forever, name="fake-kaggle", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> KaggleServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def calls(self, method: str) -> list[Seen]:
        """The RPC requests made to one method name, e.g. ``calls("CreateSubmission")``."""
        with self._lock:
            return [seen for seen in self.requests if seen.path.rsplit("/", 1)[-1] == method]

    # ----------------------------------------------------------------------------------------------- helpers

    def authorized(self, authorization: str | None) -> bool:
        """Legacy API keys travel as HTTP basic auth (username:key); access tokens as ``Bearer``."""
        if not authorization:
            return False
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "basic":
            try:
                user, _, key = base64.b64decode(value).decode().partition(":")
            except ValueError:
                return False
            return user == self.username and key == self.key
        if scheme.lower() == "bearer":
            return self.access_token is not None and value == self.access_token
        return False

    def error_body(self, error: ApiError) -> dict[str, Any]:
        if self.error_style == "legacy":
            return {"code": error.code, "message": error.message}
        body: dict[str, Any] = {"code": error.code, "message": error.message, "status": error.rpc_status}
        if error.reason:
            info: dict[str, Any] = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": error.reason}
            info["domain"] = "kaggle.com"
            if error.metadata:
                info["metadata"] = error.metadata
            body["details"] = [info]
        return {"error": body}

    def _competition(self, slug: str) -> FakeCompetition:
        comp = self.competitions.get(slug)
        if comp is None:
            if self.unknown_competition_status == 403:
                raise ApiError(403, UNKNOWN_COMPETITION_FORBIDDEN_MESSAGE)
            raise ApiError(404, NOT_FOUND_MESSAGE)
        return comp

    def _require_rules(self, comp: FakeCompetition, message: str) -> None:
        if not comp.rules_accepted:
            raise ApiError(
                403, message, reason="RulesAcceptanceRequired", metadata={"url": f"/competitions/{comp.slug}/rules"}
            )

    def _rate_limit(self) -> None:
        if self.rate_limit_submits > 0:
            self.rate_limit_submits -= 1
            raise ApiError(429, RATE_LIMIT_MESSAGE, headers={"Retry-After": str(self.retry_after)})

    @staticmethod
    def _page(items: list[Any], request: dict[str, Any], default_size: int = 20) -> tuple[list[Any], str]:
        """Offset paging behind an opaque-looking token; ``page`` (1-based) is honoured when no token is sent."""
        size = int(request.get("pageSize") or default_size)
        token = request.get("pageToken") or ""
        if token:
            try:
                start = int(token)
            except ValueError:
                raise ApiError(400, "Invalid page token") from None
        else:
            start = (max(int(request.get("page") or 1), 1) - 1) * size
        end = start + size
        return items[start:end], (str(end) if end < len(items) else "")

    def bundle(self, comp: FakeCompetition) -> bytes:
        """The competition's files as one deterministic zip, what "download all" serves."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name in sorted(comp.files):
                archive.writestr(zipfile.ZipInfo(name, _ZIP_DATE_TIME), comp.files[name], zipfile.ZIP_DEFLATED)
        return buffer.getvalue()

    # ----------------------------------------------------------------------------------------------- JSON shapes

    def competition_json(self, comp: FakeCompetition) -> dict[str, Any]:
        deadline = comp.deadline
        return {
            "id": self._competition_ids[comp.slug],
            "ref": comp.url,
            "title": comp.title,
            "url": comp.url,
            "description": comp.description,
            "category": comp.category,
            "reward": comp.reward,
            "deadline": timestamp(deadline),
            "kernelCount": 0,
            "teamCount": comp.team_count,
            "userHasEntered": comp.rules_accepted,
            "mergerDeadline": timestamp(deadline - timedelta(days=7)),
            "newEntrantDeadline": timestamp(deadline - timedelta(days=7)),
            "enabledDate": timestamp(deadline - timedelta(days=90)),
            "dateCreated": timestamp(deadline - timedelta(days=100)),
            "maxDailySubmissions": self.daily_submission_limit,
            "maxTeamSize": 5,
            "evaluationMetric": comp.evaluation_metric,
            "awardsPoints": comp.category == "Featured",
            "isKernelsSubmissionsOnly": False,
            "submissionsDisabled": False,
            "hostName": "",
        }

    def submission_json(self, record: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "ref": record["ref"],
            "totalBytes": len(record["content"]),
            "date": timestamp(record["date"]),
            "description": record["message"],
            "fileName": record["file_name"],
            "status": record["status"],
            "submittedBy": self.username,
            "submittedByRef": self.username,
            "teamName": self.username,
        }
        if record["status"] == "COMPLETE":
            if record["public_score"] is not None:
                body["publicScore"] = format_score(record["public_score"])
            if record["private_score"] is not None:
                body["privateScore"] = format_score(record["private_score"])
        if record["status"] == "ERROR":
            body["errorDescription"] = record["error_description"]
        return body

    def _poll(self, record: dict[str, Any]) -> None:
        """One status poll: a PENDING submission stays so for ``pending_polls`` polls, then shows its outcome."""
        if record["status"] != "PENDING":
            return
        if record["pending_polls_left"] > 0:
            record["pending_polls_left"] -= 1
            return
        record["status"] = "ERROR" if record["error_description"] is not None else "COMPLETE"

    # ----------------------------------------------------------------------------------------------- RPCs

    def rpc(self, service: str, method: str, request: dict[str, Any]) -> dict[str, Any]:
        """Answers one ``POST /v1/{service}/{method}``; raises ApiError or _Redirect for non-200 answers."""
        handler = self._rpcs().get((service, method))
        if handler is None:
            raise ApiError(501, f"{service}/{method} is not served by tests/kaggle_server.py")
        with self._lock:
            return handler(request)

    def _rpcs(self) -> dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]]:
        return {
            (COMPETITIONS, "ListCompetitions"): self._list_competitions,
            (COMPETITIONS, "ListDataFiles"): self._list_data_files,
            (COMPETITIONS, "DownloadDataFiles"): self._download_data_files,
            (COMPETITIONS, "StartSubmissionUpload"): self._start_submission_upload,
            (COMPETITIONS, "CreateSubmission"): self._create_submission,
            (COMPETITIONS, "ListSubmissions"): self._list_submissions,
            (COMPETITIONS, "GetSubmission"): self._get_submission,
            (OAUTH, "IntrospectToken"): self._introspect_token,
            (KERNELS, "ListKernels"): self._list_kernels,
            (KERNELS, "GetKernel"): self._get_kernel,
            (COMPETITIONS, "ListCompetitionTopics"): self._list_competition_topics,
            (COMPETITIONS, "ListTopicMessages"): self._list_topic_messages,
            (SEARCH, "ListEntities"): self._list_entities,
        }

    def _list_competitions(self, request: dict[str, Any]) -> dict[str, Any]:
        search = (request.get("search") or "").lower()
        segment = request.get("category") or "HOST_SEGMENT_UNSPECIFIED"
        entered_only = request.get("group") == "COMPETITION_LIST_TAB_ENTERED"
        found = [
            comp
            for comp in self.competitions.values()
            if (not search or search in comp.slug.lower() or search in comp.title.lower())
            and (segment == "HOST_SEGMENT_UNSPECIFIED" or HOST_SEGMENTS.get(segment) == comp.category)
            and (not entered_only or comp.rules_accepted)
        ]
        page, next_token = self._page(found, request)
        body: dict[str, Any] = {"competitions": [self.competition_json(comp) for comp in page]}
        if next_token:
            body["nextPageToken"] = next_token
        return body

    def _list_data_files(self, request: dict[str, Any]) -> dict[str, Any]:
        comp = self._competition(request.get("competitionName", ""))
        files = [
            {"ref": name, "name": name, "totalBytes": len(content), "creationDate": timestamp(comp.files_modified)}
            for name, content in sorted(comp.files.items())
        ]
        page, next_token = self._page(files, request)
        body: dict[str, Any] = {"files": page}
        if next_token:
            body["nextPageToken"] = next_token
        return body

    def _download_data_files(self, request: dict[str, Any]) -> dict[str, Any]:
        comp = self._competition(request.get("competitionName", ""))
        self._require_rules(comp, RULES_DOWNLOAD_MESSAGE)
        # Kaggle redirects to a short-lived signed Cloud Storage URL; this one is signed with a random token.
        token = secrets.token_hex(16)
        self._download_tokens[token] = comp.slug
        expires = int((_now() + timedelta(hours=1)).timestamp())
        raise _Redirect(
            f"{self.url}/storage/kaggle-competitions-data/{comp.slug}/archive.zip?Expires={expires}&Signature={token}"
        )

    def _start_submission_upload(self, request: dict[str, Any]) -> dict[str, Any]:
        self._rate_limit()
        comp = self._competition(request.get("competitionName") or "")
        self._require_rules(comp, RULES_SUBMIT_MESSAGE)
        token = secrets.token_urlsafe(24)
        self.uploads[token] = Upload(
            token=token,
            slug=comp.slug,
            file_name=request.get("fileName", ""),
            declared_length=int(request.get("contentLength") or 0),
        )
        create_url = (
            f"{self.url}/upload/storage/v1/b/kaggle-competitions-submissions/o?uploadType=resumable&upload_id={token}"
        )
        return {"token": token, "createUrl": create_url}

    def _create_submission(self, request: dict[str, Any]) -> dict[str, Any]:
        self._rate_limit()
        comp = self._competition(request.get("competitionName", ""))
        self._require_rules(comp, RULES_SUBMIT_MESSAGE)
        upload = self.uploads.get(request.get("blobFileTokens", ""))
        if upload is None or upload.slug != comp.slug or not upload.complete:
            raise ApiError(400, "Invalid blob file token: the file was not uploaded.")
        now = datetime.now(UTC)
        records = self.submissions.setdefault(comp.slug, [])
        used_today = sum(1 for r in records if r["date"].date() == now.date() and r["error_description"] is None)
        if used_today >= self.daily_submission_limit:
            tomorrow = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
            hours = (tomorrow - now).total_seconds() / 3600
            message = DAILY_LIMIT_MESSAGE.format(limit=self.daily_submission_limit, hours=hours)
            raise ApiError(400, message, rpc_status="FAILED_PRECONDITION")
        content = bytes(upload.content)
        public, private, error = None, None, None
        try:
            public = comp.public_score(content) if comp.public_score else None
            private = comp.private_score(content) if comp.private_score else None
        except Exception as exc:  # a scorer that fails is how a test makes a submission end in ERROR
            public, private, error = None, None, str(exc) or type(exc).__name__
        ref = self._next_ref
        self._next_ref += 1
        records.append(
            {
                "ref": ref,
                "file_name": upload.file_name,
                "content": content,
                "message": request.get("submissionDescription") or "",
                "date": now,
                "public_score": public,
                "private_score": private,
                "error_description": error,
                "status": "PENDING",
                "pending_polls_left": comp.pending_polls,
            }
        )
        return {"message": f"Successfully submitted to {comp.title}", "ref": ref}

    def _list_submissions(self, request: dict[str, Any]) -> dict[str, Any]:
        comp = self._competition(request.get("competitionName", ""))
        records = sorted(self.submissions.get(comp.slug, []), key=lambda r: r["ref"], reverse=True)
        for record in records:
            self._poll(record)
        group = request.get("group") or "SUBMISSION_GROUP_ALL"
        if group == "SUBMISSION_GROUP_SUCCESSFUL":
            records = [r for r in records if r["status"] == "COMPLETE"]
        elif group == "SUBMISSION_GROUP_SELECTED":
            records = []
        page, next_token = self._page(records, request)
        body: dict[str, Any] = {"submissions": [self.submission_json(r) for r in page]}
        if next_token:
            body["nextPageToken"] = next_token
        return body

    def _get_submission(self, request: dict[str, Any]) -> dict[str, Any]:
        ref = int(request.get("ref") or 0)
        for records in self.submissions.values():
            for record in records:
                if record["ref"] == ref:
                    self._poll(record)
                    return self.submission_json(record)
        raise ApiError(404, NOT_FOUND_MESSAGE)

    def _introspect_token(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.access_token is not None and request.get("token") == self.access_token:
            return {"active": True, "username": self.username, "clientId": "kaggle-cli", "scope": "resources.admin:*"}
        return {}

    # ----------------------------------------------------------------------------------------------- community

    def kernel_json(self, kernel: FakeKernel) -> dict[str, Any]:
        """An ApiKernelMetadata, as ListKernels and GetKernel send it (no tier, no score: the API has neither)."""
        return {
            "id": 70_000_000 + sorted(self.kernels).index(kernel.ref.lower()),
            "ref": kernel.ref,
            "title": kernel.title,
            "author": kernel.author or kernel.owner,
            "slug": kernel.slug,
            "lastRunTime": timestamp(kernel.last_run),
            "language": kernel.language,
            "kernelType": kernel.kernel_type,
            "isPrivate": False,
            "enableGpu": False,
            "enableInternet": True,
            "competitionDataSources": [kernel.competition],
            "totalVotes": kernel.votes,
            "currentVersionNumber": 3,
            "dockerImage": "gcr.io/kaggle-images/python",
            "machineShape": "NvidiaTeslaP100",
        }

    def _list_kernels(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.rate_limit_kernel_lists > 0:
            self.rate_limit_kernel_lists -= 1
            raise ApiError(429, RATE_LIMIT_MESSAGE, headers={"Retry-After": str(self.retry_after)})
        wanted = {key: request.get(key) or "all" for key in ("language", "kernelType")}
        found = [
            k
            for k in self.kernels.values()
            if k.competition == (request.get("competition") or k.competition)
            and wanted["language"] in ("all", k.language)
            and wanted["kernelType"] in ("all", k.kernel_type)
        ]
        by = {"DATE_RUN": lambda k: k.last_run, "DATE_CREATED": lambda k: k.last_run}
        found.sort(key=by.get(request.get("sortBy") or "", lambda k: k.votes), reverse=True)
        page, next_token = self._page(found, request)
        body: dict[str, Any] = {"kernels": [self.kernel_json(k) for k in page]}
        if next_token:
            body["nextPageToken"] = next_token
        return body

    def _get_kernel(self, request: dict[str, Any]) -> dict[str, Any]:
        kernel = self.kernels.get(f"{request.get('userName', '')}/{request.get('kernelSlug', '')}".lower())
        if kernel is None:
            raise ApiError(404, NOT_FOUND_MESSAGE)
        if kernel.pull_status == 429:
            raise ApiError(429, RATE_LIMIT_MESSAGE, headers={"Retry-After": str(self.retry_after)})
        if kernel.pull_status:
            raise ApiError(kernel.pull_status, "Permission 'kernels.get' was denied")
        blob = {"source": kernel.source, "language": kernel.language, "kernelType": kernel.kernel_type}
        return {"metadata": self.kernel_json(kernel), "blob": {**blob, "slug": kernel.slug}}

    def _list_competition_topics(self, request: dict[str, Any]) -> dict[str, Any]:
        comp = self._competition(request.get("competitionName", ""))
        found = [t for t in self.topics.values() if t.competition == comp.slug]
        sort_by = request.get("sortBy") or ""
        if sort_by == "TOPIC_LIST_SORT_BY_TOP":
            found.sort(key=lambda t: t.votes, reverse=True)
        elif sort_by in ("TOPIC_LIST_SORT_BY_NEW", "TOPIC_LIST_SORT_BY_RECENT"):
            found.sort(key=lambda t: t.posted, reverse=True)
        start = (max(int(request.get("page") or 1), 1) - 1) * 20
        topics = []
        for topic in found[start : start + 20]:
            comments = sum(1 for _ in _walk(topic.messages)) - 1
            last = max((m.posted for m in _walk(topic.messages)), default=topic.posted)
            topics.append(
                {
                    "id": topic.id,
                    "title": topic.title,
                    "topicUrl": f"/competitions/{comp.slug}/discussion/{topic.id}",
                    "authorName": topic.author,
                    "commentCount": max(comments, 0),
                    "votes": topic.votes,
                    "postDate": timestamp(topic.posted),
                    "lastCommentPostDate": timestamp(last),
                    "isSticky": topic.sticky,
                }
            )
        return {"topics": topics, "totalCount": len(found)}

    def _list_topic_messages(self, request: dict[str, Any]) -> dict[str, Any]:
        comp = self._competition(request.get("competitionName", ""))
        topic = self.topics.get(int(request.get("topicId") or 0))
        if topic is None or topic.competition != comp.slug:
            raise ApiError(404, NOT_FOUND_MESSAGE)
        messages = list(topic.messages)
        sort_by = request.get("sortBy") or ""
        if sort_by in ("COMMENT_LIST_SORT_BY_OLD", "COMMENT_LIST_SORT_BY_NEW"):
            messages.sort(key=lambda m: m.posted, reverse=sort_by.endswith("NEW"))
        elif sort_by == "COMMENT_LIST_SORT_BY_TOP":
            messages.sort(key=lambda m: m.votes, reverse=True)
        size = int(request.get("pageSize") or -1)
        return {"messages": [self._message_json(m) for m in (messages if size < 0 else messages[:size])]}

    def _message_json(self, message: FakeMessage) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": message.id,
            "postDate": timestamp(message.posted),
            "content": message.content if message.content is not None else f"<p>{message.markdown}</p>",
            "rawMarkdown": message.markdown,
            "authorName": message.author,
            "votes": message.votes,
            "replies": [self._message_json(r) for r in message.replies],
        }
        if message.deleted:
            body.update(isDeleted=True, content="", rawMarkdown="")
        return body

    def _list_entities(self, request: dict[str, Any]) -> dict[str, Any]:
        filters = request.get("filters") or {}
        query = str(filters.get("query") or "").lower()
        types = filters.get("documentTypes") or []
        found = [k for k in self.kernels.values() if query in k.title.lower()] if not types or "KERNEL" in types else []
        if request.get("canonicalOrderBy") == "LIST_SEARCH_CONTENT_ORDER_BY_VOTES":
            found.sort(key=lambda k: k.votes, reverse=True)
        page, next_token = self._page(found, request)
        body: dict[str, Any] = {"documents": [self._kernel_document(k) for k in page], "totalDocuments": len(found)}
        if next_token:
            body["nextPageToken"] = next_token
        return body

    def _kernel_document(self, kernel: FakeKernel) -> dict[str, Any]:
        owner: dict[str, Any] = {
            "id": 1000 + sum(map(ord, kernel.owner)),
            "displayName": kernel.author or kernel.owner,
            "url": f"/{kernel.owner}",
            "userName": kernel.owner,
        }
        if kernel.tier != "NOVICE":  # the enum's default value: left out of protobuf JSON
            owner["tier"] = kernel.tier
        document: dict[str, Any] = {"hasLinkedSubmission": kernel.best_public_score is not None}
        if kernel.best_public_score:
            document["bestPublicScore"] = kernel.best_public_score
        return {
            "id": self.kernel_json(kernel)["id"],
            "documentType": "KERNEL",
            "title": kernel.title,
            "createTime": timestamp(kernel.last_run - timedelta(days=10)),
            "updateTime": timestamp(kernel.last_run),
            "votes": kernel.votes,
            "ownerUser": owner,
            "kernelDocument": document,
            "slug": kernel.slug,
        }

    # ----------------------------------------------------------------------------------------------- non-RPC URLs

    def upload(self, token: str, content_range: str | None, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """A PUT to a createUrl, following Cloud Storage's resumable-upload rules.

        No ``Content-Range``: the body is the whole file (what ``upload_complete`` sends). ``bytes */N``: a status
        query, answered 200 when complete or 308 with ``Range: bytes=0-K`` (what the client's resume path reads).
        ``bytes A-B/N``: a chunk stored at offset A; 308 until all N bytes are in.
        """
        with self._lock:
            upload = self.uploads.get(token)
            if upload is None:
                return 404, {"Content-Type": "text/plain"}, b"No such upload session."
            if content_range:
                spec = content_range.strip().removeprefix("bytes").strip()
                span, _, total_text = spec.partition("/")
                total = int(total_text) if total_text.isdigit() else None
                if span != "*":
                    start = int(span.split("-", 1)[0])
                    upload.content = upload.content[:start] + bytearray(body)
                if total is not None and len(upload.content) >= total:
                    upload.complete = True
                elif not upload.complete:
                    headers = {"Range": f"bytes=0-{len(upload.content) - 1}"} if upload.content else {}
                    return 308, headers, b""
            else:
                upload.content = bytearray(body)
                upload.complete = True
            size = len(upload.content)
            obj = {"bucket": "kaggle-competitions-submissions", "name": upload.file_name, "size": str(size)}
            return 200, {"Content-Type": "application/json; charset=UTF-8"}, json.dumps(obj).encode()

    def archive(self, slug: str, signature: str) -> tuple[FakeCompetition, bytes] | None:
        """The bundle behind a signed download URL, or None when the signature was not issued for that slug."""
        with self._lock:
            if self._download_tokens.get(signature) != slug or slug not in self.competitions:
                return None
            comp = self.competitions[slug]
            return comp, self.bundle(comp)


def _walk(messages: list[FakeMessage]) -> Iterator[FakeMessage]:
    for message in messages:
        yield message
        yield from _walk(message.replies)


class _Handler(BaseHTTPRequestHandler):
    """Routes requests to the KaggleServer attached to the HTTP server; keeps connections alive like a real API."""

    protocol_version = "HTTP/1.1"
    server_version = "FakeKaggle/1.0"

    @property
    def fake(self) -> KaggleServer:
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read `requests`, not stderr
        pass

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _record(self, body: bytes) -> tuple[str, dict[str, list[str]]]:
        parts = urlsplit(self.path)
        try:
            parsed: Any = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError):
            parsed = None
        with self.fake._lock:
            self.fake.requests.append(
                Seen(self.command, parts.path, dict(self.headers.items()), parsed, parts.query, len(body))
            )
        return parts.path, parse_qs(parts.query)

    def _send(self, status: int, headers: dict[str, str], body: bytes = b"", *, head: bool = False) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", headers.get("Content-Length", str(len(body))))
        self.end_headers()
        if body and not head:
            self.wfile.write(body)

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self._send(status, {"Content-Type": "application/json; charset=utf-8", **(headers or {})}, body)

    def _send_error(self, error: ApiError) -> None:
        self._send_json(error.code, self.fake.error_body(error), error.headers)

    def do_POST(self) -> None:
        body = self._read_body()
        path, _ = self._record(body)
        parts = path.split("/")
        if len(parts) != 4 or parts[1] != "v1":
            self._send_error(ApiError(404, NOT_FOUND_MESSAGE))
            return
        if not self.fake.authorized(self.headers.get("Authorization")):
            self._send_error(ApiError(401, UNAUTHENTICATED_MESSAGE))
            return
        try:
            request = json.loads(body) if body else {}
            if not isinstance(request, dict):
                raise ValueError("not an object")
        except ValueError:
            self._send_error(ApiError(400, "Invalid JSON payload received."))
            return
        try:
            payload = self.fake.rpc(parts[2], parts[3], request)
        except _Redirect as redirect:
            self._send(HTTPStatus.FOUND, {"Location": redirect.location})
        except ApiError as error:
            self._send_error(error)
        else:
            self._send_json(200, payload)

    def do_PUT(self) -> None:
        body = self._read_body()
        path, query = self._record(body)
        token = (query.get("upload_id") or [""])[0]
        if not path.startswith("/upload/storage/v1/b/") or not token:
            self._send(404, {"Content-Type": "text/plain"}, b"Not Found")
            return
        status, headers, reply = self.fake.upload(token, self.headers.get("Content-Range"), body)
        self._send(status, headers, reply)

    def do_GET(self) -> None:
        self._serve_archive(head=False)

    def do_HEAD(self) -> None:
        self._serve_archive(head=True)

    def _serve_archive(self, *, head: bool) -> None:
        """A signed-URL download: the whole zip, or the byte range the client asks for when resuming."""
        self._read_body()
        path, query = self._record(b"")
        parts = path.split("/")  # /storage/kaggle-competitions-data/{slug}/archive.zip
        found = None
        if len(parts) == 5 and parts[1] == "storage" and parts[4] == "archive.zip":
            found = self.fake.archive(parts[3], (query.get("Signature") or [""])[0])
        if found is None:
            denied = b"<Error><Code>AccessDenied</Code><Message>Access denied.</Message></Error>"
            self._send(403, {"Content-Type": "application/xml; charset=UTF-8"}, denied, head=head)
            return
        comp, data = found
        etag = '"' + hashlib.md5(data).hexdigest() + '"'
        modified = (
            comp.files_modified.replace(tzinfo=UTC) if comp.files_modified.tzinfo is None else comp.files_modified
        )
        last_modified = format_datetime(modified.astimezone(UTC).replace(microsecond=0), usegmt=True)
        headers = {
            "Content-Type": "application/zip",
            "Last-Modified": last_modified,
            "ETag": etag,
            "Accept-Ranges": "bytes",
        }
        start = self._range_start(len(data), etag, last_modified)
        if start is None:
            self._send(200, headers, data, head=head)
        elif start >= len(data):
            self._send(416, {"Content-Range": f"bytes */{len(data)}"}, head=head)
        else:
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            self._send(206, headers, data[start:], head=head)

    def _range_start(self, size: int, etag: str, last_modified: str) -> int | None:
        """Where a ``Range: bytes=N-`` resume starts, or None for a full reply (no Range, or a stale If-Range)."""
        requested = self.headers.get("Range") or ""
        if not requested.startswith("bytes=") or "," in requested:
            return None
        if_range = self.headers.get("If-Range")
        if if_range and if_range != etag:
            try:
                if parsedate_to_datetime(if_range) != parsedate_to_datetime(last_modified):
                    return None
            except (TypeError, ValueError):
                return None
        first = requested.removeprefix("bytes=").split("-", 1)[0]
        return int(first) if first.isdigit() else None
