"""A task's community material: discussion posts and public notebooks or scripts.

On disk, in the task folder (never in the data a script reads)::

    <task>/knowledge/<id>.md

one Markdown file per item, with YAML front matter holding its quality signals::

    ---
    id: k3f9a1c2b7e
    kind: notebook            # post | notebook | script
    title: "LightGBM with target encoding, 0.812"
    author: someone
    author_tier: expert       # novice | contributor | expert | master | grandmaster | unknown
    votes: 152
    public_score: 0.81234     # or null
    date: 2021-03-14          # when it was posted or last changed
    source: https://www.kaggle.com/code/someone/lgbm-te   # or the file it came from
    ---
    the text: Markdown, with a notebook's code cells as fenced Python and no outputs

Ingestion keeps nothing dated after the cut-off (the competition's deadline, or a date the user
gives): material from after it would tell the agent what the competition itself revealed.
Notebook outputs, images, widgets and progress bars are stripped; votes, tiers and scores kept.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from datetime import date, datetime
from pathlib import Path

import yaml

from ..core.errors import TaskError
from ..util.fs import atomic_write

FOLDER = "knowledge"
KINDS = ("post", "notebook", "script")
TIERS = ("novice", "contributor", "expert", "master", "grandmaster", "unknown")
_MAX_TEXT = 200_000  # characters of one item: a pasted dataset is not community knowledge
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b[^>]*>", re.IGNORECASE)
_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=\s]{40,}")
_WIDGET = re.compile(r"<(div|script|style|iframe)\b.*?</\1>", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Item:
    id: str
    kind: str
    title: str
    author: str
    author_tier: str
    votes: int
    public_score: float | None
    date: str  # ISO date
    source: str
    text: str

    def header(self) -> dict:
        data = asdict(self)
        del data["text"]
        return data

    def to_markdown(self) -> str:
        front = yaml.safe_dump(self.header(), sort_keys=False, allow_unicode=True)
        return f"---\n{front}---\n{self.text.strip()}\n"


def knowledge_dir(task_root: Path) -> Path:
    return task_root / FOLDER


def parse_date(value: object, where: str) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return datetime.fromisoformat(str(value).strip().replace("Z", "+00:00")).date()
    except ValueError:
        raise TaskError(f"{where}: {value!r} is not a date", "write it as YYYY-MM-DD") from None


def _front_matter(text: str, where: str) -> tuple[dict, str]:
    if not text.startswith("---"):
        return {}, text
    parts = text.split("\n---", 1)
    if len(parts) < 2:
        raise TaskError(f"{where}: the front matter has no closing '---'", "end it with a line '---'")
    try:
        meta = yaml.safe_load(parts[0][3:]) or {}
    except yaml.YAMLError as exc:
        raise TaskError(f"{where}: the front matter is not YAML: {exc}", f"fix {where}") from None
    if not isinstance(meta, dict):
        raise TaskError(f"{where}: the front matter is not a mapping", "write 'key: value' lines")
    return meta, parts[1].lstrip("\n")


def clean_markdown(text: str) -> str:
    """Text without images, embedded data, HTML widgets or runs of blank lines."""
    text = _WIDGET.sub("", _DATA_URI.sub("", _IMAGE.sub("", text)))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def notebook_text(raw: str, where: str) -> str:
    """A notebook's Markdown cells and code cells (as fenced Python), outputs dropped."""
    try:
        cells = json.loads(raw).get("cells", [])
    except (ValueError, AttributeError):
        raise TaskError(f"{where} is not a Jupyter notebook (JSON with cells)", "export it as .ipynb") from None
    parts = []
    for cell in cells:
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if not source.strip():
            continue
        if cell.get("cell_type") == "code":
            lines = [
                line for line in source.splitlines() if not line.lstrip().startswith(("!pip", "%pip", "%%capture"))
            ]
            parts.append("```python\n" + "\n".join(lines).strip() + "\n```")
        elif cell.get("cell_type") == "markdown":
            parts.append(clean_markdown(source))
    return "\n\n".join(p for p in parts if p.strip())


def read_item(path: Path, defaults: dict | None = None) -> Item:
    """One file as an item: Markdown with front matter, a notebook or a script. Signals missing
    from the file come from ``defaults`` (e.g. what the Kaggle API says of a kernel)."""
    where = str(path)
    raw = path.read_text(encoding="utf-8", errors="replace")
    meta: dict = dict(defaults or {})
    sidecar = path.with_name(path.name + ".yaml")  # signals beside a notebook or script
    if sidecar.is_file():
        meta.update(_front_matter(f"---\n{sidecar.read_text()}\n---\n", str(sidecar))[0])
    if path.suffix == ".ipynb":
        kind, text = "notebook", notebook_text(raw, where)
        meta.update(json.loads(raw).get("metadata", {}).get("mlguild", {}) or {})
    elif path.suffix == ".py":
        kind = "script"
        if raw.startswith("# ---"):  # front matter as a comment block, so the file stays Python
            head, _, body = raw[len("# ---") :].partition("\n# ---")
            meta.update(_front_matter("---\n" + re.sub(r"(?m)^# ?", "", head) + "\n---\n", where)[0])
            raw = body.split("\n", 1)[1] if "\n" in body else ""
        text = f"```python\n{raw.strip()}\n```"
    else:
        found, body = _front_matter(raw, where)
        meta.update(found)
        kind, text = "post", clean_markdown(body)
    kind = str(meta.get("kind", kind))
    if kind not in KINDS:
        raise TaskError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}", "fix 'kind' in its front matter")
    if "date" not in meta:
        raise TaskError(f"{where} has no date", "add 'date: YYYY-MM-DD' to its front matter (the cut-off needs it)")
    tier = str(meta.get("author_tier") or "unknown").lower()
    score = meta.get("public_score")
    return Item(
        id="",
        kind=kind,
        title=str(meta.get("title") or path.stem)[:300],
        author=str(meta.get("author") or "unknown")[:100],
        author_tier=tier if tier in TIERS else "unknown",
        votes=int(meta.get("votes") or 0),
        public_score=float(score) if score not in (None, "") else None,
        date=parse_date(meta["date"], where).isoformat(),
        source=str(meta.get("source") or path.name),
        text=text[:_MAX_TEXT],
    )


@dataclass
class Ingested:
    added: list[Item]
    after_cutoff: list[tuple[str, str]]  # (source, date) of what the cut-off kept out
    duplicates: int


def add_items(task_root: Path, paths: list[Path], cutoff: date | None) -> Ingested:
    """Ingest files (or every .md, .ipynb and .py file under folders) into the task's knowledge."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():  # (a notebook's or script's .yaml sidecar is read with it)
            files += sorted(p for p in path.rglob("*") if p.suffix in (".md", ".ipynb", ".py") and p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise TaskError(f"{path} does not exist", "give files or folders of posts and notebooks")
    return store_items(task_root, [read_item(f) for f in files], cutoff)


def store_items(task_root: Path, items: list[Item], cutoff: date | None) -> Ingested:
    """Write the items dated on or before ``cutoff`` (all, without one); the same text twice is
    kept once (its id is the hash of its text)."""
    folder = knowledge_dir(task_root)
    folder.mkdir(exist_ok=True)
    result = Ingested([], [], 0)
    for item in items:
        if cutoff is not None and date.fromisoformat(item.date) > cutoff:
            result.after_cutoff.append((item.source, item.date))
            continue
        digest = "k" + hashlib.sha256(item.text.encode()).hexdigest()[:10]
        path = folder / f"{digest}.md"
        if path.exists():
            result.duplicates += 1
            continue
        stored = Item(**{**asdict(item), "id": digest})
        atomic_write(path, stored.to_markdown())
        result.added.append(stored)
    return result


def list_items(task_root: Path) -> list[Item]:
    folder = knowledge_dir(task_root)
    if not folder.is_dir():
        return []
    items = []
    for path in sorted(folder.glob("k*.md")):
        meta, body = _front_matter(path.read_text(encoding="utf-8", errors="replace"), str(path))
        score = meta.get("public_score")
        items.append(
            Item(
                id=path.stem,
                kind=str(meta.get("kind") or "post"),
                title=str(meta.get("title") or ""),
                author=str(meta.get("author") or "unknown"),
                author_tier=str(meta.get("author_tier") or "unknown"),
                votes=int(meta.get("votes") or 0),
                public_score=float(score) if score is not None else None,
                date=str(meta.get("date") or ""),
                source=str(meta.get("source") or ""),
                text=body.strip(),
            )
        )
    return sorted(items, key=lambda i: (-i.votes, i.date, i.id))


CUTOFF_FILE = "cutoff.txt"  # in knowledge/: the cut-off a user gave once, kept for every later add


def remember_cutoff(task_root: Path, when: date) -> None:
    """Keep ``when`` as the task's cut-off: a later ``knowledge add`` without ``--cutoff`` applies it
    too, so material posted after the competition cannot slip in by a forgotten flag."""
    knowledge_dir(task_root).mkdir(exist_ok=True)
    atomic_write(knowledge_dir(task_root) / CUTOFF_FILE, when.isoformat() + "\n")


def task_cutoff(task_root: Path) -> date | None:
    """The task's cut-off: the one a user gave (``remember_cutoff``), else the competition's
    deadline, when the task knows it (competition.json of a Kaggle task)."""
    remembered = knowledge_dir(task_root) / CUTOFF_FILE
    if remembered.is_file():
        return parse_date(remembered.read_text().strip(), str(remembered))
    meta = task_root / "competition.json"
    if meta.is_file():
        deadline = json.loads(meta.read_text()).get("deadline")
        if deadline:
            return parse_date(deadline, str(meta))
    return None


def find_item(task_root: Path, item_id: str) -> Item:
    """The item whose id is ``item_id`` or starts with it (a unique prefix is enough)."""
    items = list_items(task_root)
    found = [i for i in items if i.id == item_id] or [i for i in items if item_id and i.id.startswith(item_id)]
    if len(found) > 1:
        raise TaskError(
            f"{item_id!r} is the start of {len(found)} items' ids ({', '.join(i.id for i in found[:5])})",
            "give more of the id (see `mlguild knowledge list --task DIR`)",
        )
    if not found:
        raise TaskError(f"no item {item_id!r} in the task's knowledge", "see `mlguild knowledge list --task DIR`")
    return found[0]


def remove_item(task_root: Path, item_id: str) -> Item:
    """Delete one item (by id or unique prefix) from the task's knowledge; the item it was."""
    item = find_item(task_root, item_id)
    (knowledge_dir(task_root) / f"{item.id}.md").unlink()
    return item
