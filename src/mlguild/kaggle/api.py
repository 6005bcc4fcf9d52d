"""Talking to Kaggle through the official ``kaggle`` client (the ``[kaggle]`` extra).

Four calls for a task: a competition's metadata, its data (downloaded and unpacked), a
submission, and the list of one's submissions with their public scores. And the calls its
community material needs (sources/kaggle_knowledge.py): its public notebooks and scripts
(listed, pulled, and looked up in Kaggle's search for what the list lacks: the author's tier and
the best public score), and its discussion topics with their messages. Every failure becomes a
``KaggleError`` that says what went wrong and what to do: missing or refused credentials, an
unknown competition or notebook, rules not accepted, a rate (``RateLimited``) or daily limit.

``MLGUILD_KAGGLE_ENDPOINT`` points the client at another API endpoint than api.kaggle.com (a
proxy, or the local server the tests run): the client has no setting for it, so every client
it builds gets that endpoint set on its HTTP layer.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.errors import KaggleError

ENDPOINT_ENV = "MLGUILD_KAGGLE_ENDPOINT"
_URL = re.compile(r"^https?://(www\.)?kaggle\.com/(c|competitions)/(?P<slug>[A-Za-z0-9][\w-]*)")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{1,80}$")
_CREDENTIALS_FIX = (
    "create an API token at https://www.kaggle.com/settings (API section) and save it as "
    "~/.kaggle/kaggle.json, or set KAGGLE_USERNAME and KAGGLE_KEY (or KAGGLE_API_TOKEN)"
)


def competition_slug(source: str) -> str | None:
    """The competition named by a Kaggle URL, ``kaggle:SLUG``, or None."""
    found = _URL.match(source.strip())
    if found:
        return found.group("slug")
    if source.startswith("kaggle:") and _SLUG.match(source[len("kaggle:") :]):
        return source[len("kaggle:") :]
    return None


@dataclass(frozen=True)
class Competition:
    slug: str
    title: str
    category: str
    deadline: datetime | None
    evaluation_metric: str
    description: str
    url: str
    max_daily_submissions: int | None
    user_has_entered: bool


@dataclass(frozen=True)
class Kernel:
    """A public notebook or script, as Kaggle's kernels list describes it."""

    ref: str  # owner/slug
    title: str
    author: str
    votes: int
    last_run: datetime | None  # when its current version last ran
    kernel_type: str  # notebook | script


@dataclass(frozen=True)
class KernelSignals:
    """What only Kaggle's search says of a notebook."""

    tier: object  # the author's performance tier as Kaggle gives it (an enum, a name or a number)
    best_public_score: float | None


@dataclass(frozen=True)
class Topic:
    id: int
    title: str
    url: str
    author: str
    votes: int
    posted: datetime | None


@dataclass(frozen=True)
class Message:
    author: str
    posted: datetime | None
    votes: int
    text: str  # Markdown when Kaggle has it, else its HTML


@dataclass(frozen=True)
class Submission:
    ref: int
    file_name: str
    description: str
    date: datetime | None
    status: str  # pending | complete | error
    public_score: float | None
    error: str


def _has_credentials() -> bool:
    if os.environ.get("KAGGLE_API_TOKEN") or (os.environ.get("KAGGLE_USERNAME") and os.environ.get("KAGGLE_KEY")):
        return True
    folders = [Path(os.environ["KAGGLE_CONFIG_DIR"])] if os.environ.get("KAGGLE_CONFIG_DIR") else []
    folders.append(Path.home() / ".kaggle")
    return any((f / name).is_file() for f in folders for name in ("kaggle.json", "access_token"))


def connect() -> KaggleClient:
    """An authenticated client. KaggleError when the extra or the credentials are missing."""
    if not _has_credentials():
        raise KaggleError("no Kaggle credentials found", _CREDENTIALS_FIX)
    try:
        from kaggle.api.kaggle_api_extended import KaggleApi
    except ImportError:
        raise KaggleError("the Kaggle client is not installed", "pip install 'mlguild[kaggle]'") from None
    endpoint = os.environ.get(ENDPOINT_ENV)

    class PointedApi(KaggleApi):
        def build_kaggle_client(self):
            client = super().build_kaggle_client()
            if endpoint:
                client.http_client()._endpoint = endpoint.rstrip("/")
            return client

    api = PointedApi()
    try:
        api.authenticate()
    except SystemExit:  # the client exits when it finds no usable credentials
        raise KaggleError("Kaggle did not accept the credentials found", _CREDENTIALS_FIX) from None
    return KaggleClient(api)


class KaggleClient:
    def __init__(self, api: Any):
        self.api = api

    def competition(self, slug: str) -> Competition:
        with _explained(slug, "read the competition"):
            found = self.api.competitions_list(search=slug, category="all")
        for comp in getattr(found, "competitions", None) or []:
            if str(comp.ref).rstrip("/").rsplit("/", 1)[-1] == slug:
                return Competition(
                    slug=slug,
                    title=comp.title,
                    category=str(comp.category or ""),
                    deadline=comp.deadline,
                    evaluation_metric=str(comp.evaluation_metric or ""),
                    description=str(comp.description or ""),
                    url=f"https://www.kaggle.com/competitions/{slug}",
                    max_daily_submissions=int(comp.max_daily_submissions or 0) or None,
                    user_has_entered=bool(comp.user_has_entered),
                )
        raise KaggleError(
            f"Kaggle has no competition {slug!r}",
            "check the name in the competition's URL (kaggle.com/competitions/NAME)",
        )

    def download(self, slug: str, dest: Path) -> list[Path]:
        """Download the competition's files and unpack them into ``dest``; the files written."""
        dest.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="mlguild-kaggle-") as tmp:
            with _explained(slug, "download the data"):
                self.api.competition_download_files(slug, path=tmp, force=True, quiet=True)
            archives = sorted(Path(tmp).glob("*.zip"))
            if not archives:
                raise KaggleError(f"Kaggle sent no archive for {slug!r}", "try again later")
            return _unpack(archives[0], dest)

    def submit(self, slug: str, csv: Path, message: str) -> int | None:
        """Upload a submission; its reference, when Kaggle gives one."""
        with _explained(slug, "submit"):
            reply = self.api.competition_submit(str(csv), message, slug, quiet=True)
        text = str(getattr(reply, "message", "") or "")
        if "Could not submit" in text:
            raise KaggleError(f"Kaggle did not take the upload of {csv.name}: {text}", "try again later")
        ref = getattr(reply, "ref", None)
        return int(ref) if ref else None

    def submissions(self, slug: str) -> list[Submission]:
        with _explained(slug, "list the submissions"):
            found = self.api.competition_submissions(slug)
        return [_submission(s) for s in found or []]

    def kernels(self, slug: str, limit: int) -> list[Kernel]:
        """The competition's public Python notebooks and scripts, most voted first."""
        size = min(limit, 100)  # the client asks for at most 100 a page
        found: list[Kernel] = []
        page = 1
        while len(found) < limit:
            with _explained(slug, "list the notebooks"):
                batch = self.api.kernels_list(
                    page=page, page_size=size, competition=slug, language="python", sort_by="voteCount"
                )
            batch = [k for k in batch or [] if k is not None]
            found += [_kernel(k) for k in batch]
            if len(batch) < size:
                break
            page += 1
        return found[:limit]

    def pull_kernel(self, ref: str, dest: Path) -> Path:
        """Download the current source of notebook or script ``ref`` into ``dest``; the file."""
        dest.mkdir(parents=True, exist_ok=True)
        # The client prints a notice for a language it has no file extension for: not ours to show.
        with _explained(ref, "pull", thing="notebook"), contextlib.redirect_stdout(io.StringIO()):
            return Path(self.api.kernels_pull(ref, path=str(dest), metadata=False, quiet=True))

    def kernel_signals(self, ref: str, title: str) -> KernelSignals | None:
        """The author's tier and the best public score of notebook ``ref``: the kernels list has
        neither, Kaggle's search has both. None when the search (by title) does not find it."""
        with _explained(ref, "look up", thing="notebook"):
            found = self._method("search")(query=title, document_types=["notebook"], page_size=20)
        for doc in getattr(found, "documents", None) or []:
            owner = doc.owner_user
            if owner is None or f"{owner.user_name}/{doc.slug}".lower() != ref.lower():
                continue
            kernel = doc.kernel_document
            scored = kernel is not None and (kernel.has_linked_submission or kernel.best_public_score)
            return KernelSignals(owner.tier, float(kernel.best_public_score) if kernel and scored else None)
        return None

    def topics(self, slug: str, limit: int) -> list[Topic]:
        """The competition's discussion topics, most voted first."""
        found: dict[int, Topic] = {}
        page = 1
        while len(found) < limit:
            with _explained(slug, "list the discussions"):
                reply = self._method("competition_list_topics")(slug, sort_by="top", page=page)
            batch = [_topic(slug, t) for t in getattr(reply, "topics", None) or []]
            if not batch or all(t.id in found for t in batch):  # the end, or a server ignoring the page
                break
            found.update((t.id, t) for t in batch)
            total = int(getattr(reply, "total_count", 0) or 0)
            if total and len(found) >= total:
                break
            page += 1
        return list(found.values())[:limit]

    def topic_messages(self, slug: str, topic_id: int) -> list[Message]:
        """A topic's messages, oldest first, replies after the message they answer."""
        with _explained(slug, "read a discussion"):
            reply = self._method("competition_list_topic_messages")(slug, topic_id, sort_by="old", page_size=-1)
        return list(_messages(getattr(reply, "messages", None) or []))

    def _method(self, name: str) -> Any:
        """The client's call ``name``: not every kaggle 2.x release has search and discussions."""
        found = getattr(self.api, name, None)
        if found is None:
            raise KaggleError(f"the installed kaggle client has no {name}()", "pip install -U 'kaggle>=2.2.5'")
        return found


def _kernel(raw: Any) -> Kernel:
    return Kernel(
        ref=str(raw.ref),
        title=str(raw.title or raw.ref),
        author=str(raw.author or str(raw.ref).split("/", 1)[0]),
        votes=int(raw.total_votes or 0),
        last_run=raw.last_run_time,
        kernel_type="script" if str(raw.kernel_type or "").lower() == "script" else "notebook",
    )


def _topic(slug: str, raw: Any) -> Topic:
    url = str(raw.topic_url or f"/competitions/{slug}/discussion/{raw.id}")
    return Topic(
        id=int(raw.id),
        title=str(raw.title or ""),
        url=url if url.startswith("http") else f"https://www.kaggle.com{'' if url.startswith('/') else '/'}{url}",
        author=str(raw.author_name or "unknown"),
        votes=int(raw.votes or 0),
        posted=raw.post_date,
    )


def _messages(raw: list[Any]) -> Iterator[Message]:
    for message in raw:
        if not message.is_deleted:
            text = message.raw_markdown or message.content or ""
            yield Message(str(message.author_name or "unknown"), message.post_date, int(message.votes or 0), text)
        yield from _messages(list(message.replies or []))


def _submission(raw: Any) -> Submission:
    status = str(getattr(raw, "status", "")).rsplit(".", 1)[-1].lower()
    score = str(getattr(raw, "public_score", "") or "").strip()
    try:
        public = float(score) if score else None
    except ValueError:
        public = None
    return Submission(
        ref=int(raw.ref),
        file_name=str(raw.file_name or ""),
        description=str(raw.description or ""),
        date=raw.date,
        status=status,
        public_score=public,
        error=str(getattr(raw, "error_description", "") or ""),
    )


def _unpack(archive: Path, dest: Path) -> list[Path]:
    """Extract ``archive`` into ``dest``, refusing any member that would land outside it."""
    written = []
    root = dest.resolve()
    with zipfile.ZipFile(archive) as zf:
        for member in zf.infolist():
            target = (dest / member.filename).resolve()
            if not target.is_relative_to(root) or member.filename.startswith("/"):
                raise KaggleError(f"the archive holds a file outside its folder: {member.filename!r}", "report it")
            if member.is_dir():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(member) as src, open(target, "wb") as out:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
            written.append(target)
    return written


class RateLimited(KaggleError):
    """Kaggle answered 429: a caller fetching many things stops here, rather than asking again."""


class _explained:
    """Turn the client's HTTP errors into KaggleErrors that say what to do. ``name`` is the
    competition's slug, or a notebook's owner/slug when ``thing`` is "notebook"."""

    def __init__(self, name: str, doing: str, thing: str = "competition"):
        self.slug, self.doing, self.thing = name, doing, thing

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None or isinstance(exc, KaggleError):
            return
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if status is None:
            if isinstance(exc, (OSError, ConnectionError)) or type(exc).__module__.startswith(("requests", "urllib3")):
                raise KaggleError(
                    f"cannot reach Kaggle to {self.doing}: {exc}", "check the network connection and try again"
                ) from None
            return
        raise _error(self.slug, self.doing, int(status), _message(response), response, self.thing) from None


def _message(response: Any) -> str:
    try:
        body = response.json()
    except Exception:  # not JSON: the status says it all
        return ""
    if not isinstance(body, dict):
        return ""
    inner = body["error"] if isinstance(body.get("error"), dict) else body
    return str(inner.get("message") or "")


def _error(slug: str, doing: str, status: int, message: str, response: Any, thing: str) -> KaggleError:
    said = f" ({message})" if message else ""
    page = f"https://www.kaggle.com/competitions/{slug}"
    if thing == "notebook" and status in (403, 404):
        return KaggleError(
            f"Kaggle has no public notebook {slug!r} to {doing} (HTTP {status}){said}",
            f"check https://www.kaggle.com/code/{slug}: it may be private or deleted",
        )
    if status == 401:
        return KaggleError(f"Kaggle refused the credentials when asked to {doing}{said}", _CREDENTIALS_FIX)
    if "rules" in message.lower():
        return KaggleError(
            f"you have not accepted the rules of {slug!r}{said}", f"accept them at {page}/rules, then run this again"
        )
    if status == 429:
        wait = response.headers.get("Retry-After", "") if response is not None else ""
        return RateLimited(
            f"Kaggle is rate-limiting requests (asked to {doing}){said}",
            f"wait {wait + ' s' if wait else 'a minute'} and run this again",
        )
    if "daily" in message.lower() and "submission" in message.lower():
        return KaggleError(f"the daily submission limit of {slug!r} is used up{said}", "submit again tomorrow (UTC)")
    if status in (403, 404):
        return KaggleError(
            f"Kaggle has no competition {slug!r} you can {doing} (HTTP {status}){said}",
            f"check the name in {page}, and that you joined the competition",
        )
    return KaggleError(f"Kaggle answered HTTP {status} when asked to {doing}{said}", "try again later")
