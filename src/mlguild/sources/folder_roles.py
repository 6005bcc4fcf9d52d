"""Which folder and file of a competition folder is which: the task root and data folder of
the layouts known, the one file of a role (sample submission, train, test), and the private
answers."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import TaskError
from ..task.folder import read_header
from . import tables


def find_task_root(folder: Path) -> tuple[Path, str]:
    """(the folder task.yaml belongs in, the data folder relative to it) for the layouts known."""
    if (folder / "prepared" / "public").is_dir():  # an MLE-bench competition folder
        return folder / "prepared", "public"
    if (folder / "public").is_dir():  # MLE-bench's prepared/ itself
        return folder, "public"
    return folder, "."  # a Kaggle download: the data beside task.yaml


def pick_file(
    files: list[Path],
    data_dir: Path,
    role: str,
    exact: tuple[str, ...],
    word: str | tuple[str, ...],
    alone: list[Path] | None = None,
) -> Path:
    """The one file of ``role`` among ``files``: one named ``exact`` (any case), else the one
    whose name holds ``word`` (with several words, the first that some name holds decides), else
    the one file ``alone`` names; a TaskError naming the candidates otherwise."""
    named = {p.relative_to(data_dir).as_posix().lower(): p for p in files}
    for name in exact:
        if name in named:
            return named[name]
    matches: list[Path] = []
    for each in (word,) if isinstance(word, str) else word:
        matches = [p for p in files if each in p.name.lower()]
        if matches:
            break
    if len(matches) == 1:
        return matches[0]
    if not matches and alone is not None and len(alone) == 1:
        return alone[0]
    named = {p.relative_to(data_dir).as_posix(): p for p in files}
    shown = sorted(named)[:6] + ([f"and {len(named) - 6} more"] if len(named) > 6 else [])
    found = ", ".join(shown) or "no CSV file is left for it"
    raise TaskError(
        f"cannot tell which file is the {role} in {data_dir} ({found})",
        f"write task.yaml naming it (see docs/guides/task-folders.md), or rename it to {exact[0]}",
    )


def answers_file(root: Path, needed: list[str], notes: list[str]) -> str | None:
    """The private CSV holding the test answers, if one has the id and target columns."""
    private = root / "private"
    if not private.is_dir():
        return None
    candidates = sorted(private.glob("*.csv"), key=lambda p: (p.name not in ("answers.csv", "test.csv"), p.name))
    for path in candidates:
        header = read_header(path)
        if all(c in header for c in needed):
            notes.append(f"test answers: private/{path.name} (the final submission is graded on them)")
            return path.name
    if candidates:
        names = ", ".join(p.name for p in candidates)
        notes.append(f"no file in private/ ({names}) has the columns {needed}: the run cannot grade its submission")
    return None


def train_holding_sample(files: list[Path], id_column: str, predicted: list[str]) -> Path | None:
    """Of several files named as train files (no test in the name), the one whose header holds
    the sample submission's id and every prediction column (nfl-player-contact-detection's
    ``train_labels.csv`` beside ``train_player_tracking.csv``); None when none or several do."""
    named = [p for p in files if "train" in p.name.lower() and "test" not in p.name.lower()]
    holding = [p for p in named if {id_column, *predicted} <= set(tables.header(p))]
    return holding[0] if len(holding) == 1 and predicted else None
