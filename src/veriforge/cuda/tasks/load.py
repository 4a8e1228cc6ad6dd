"""Finding and loading task folders: ``load_task(path)``, ``iter_tasks(root)``, ``bundled_tasks()``.

A task is addressed by a folder path or, for bundled tasks, by its id (``"vector_add"``) or
``family/id``. Loading parses task.toml and checks that the files it names exist; running
anything (references, implementations) is :mod:`.validate`'s job.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

from .schema import TaskFormatError, TaskSpec, parse_task

__all__ = ["bundled_root", "bundled_tasks", "find_task", "iter_tasks", "load_task"]

FAMILIES = ("c2cuda", "torch2cuda")


def bundled_root() -> Path:
    """Where the bundled dataset lives (package data ``veriforge/data/tasks``)."""
    return Path(__file__).resolve().parents[2] / "data" / "tasks"


def load_task(path: str | Path) -> TaskSpec:
    """Parse the task folder ``path`` (or its task.toml); raises :class:`TaskFormatError`."""
    folder = Path(path)
    if folder.name == "task.toml":
        folder = folder.parent
    toml_path = folder / "task.toml"
    if not toml_path.is_file():
        raise TaskFormatError(f"{folder}: not a task folder (no task.toml)")
    try:
        data = tomllib.loads(toml_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise TaskFormatError(f"{toml_path}: invalid TOML: {exc}") from None
    spec = parse_task(data, folder.resolve(), where=str(toml_path))
    refs = ("reference.c", "reference.cu", "reference_numpy.py") if spec.family == "c2cuda" else ("reference.py",)
    missing = [refs[0]] if not any((folder / r).is_file() for r in refs) else []
    missing += [i.file for i in spec.implementations if not (folder / i.file).is_file()]
    if missing:
        raise TaskFormatError(f"{folder}: missing file(s): {', '.join(missing)}")
    return spec


def iter_tasks(root: str | Path) -> Iterator[Path]:
    """Task folders under ``root`` (any depth), sorted; ``root`` itself if it is one."""
    root = Path(root)
    if (root / "task.toml").is_file():
        yield root
        return
    for toml in sorted(root.rglob("task.toml")):
        yield toml.parent


def bundled_tasks(family: str | None = None) -> list[Path]:
    """Folders of the bundled tasks (optionally of one family)."""
    root = bundled_root()
    if not root.is_dir():
        return []
    fams = [family] if family else list(FAMILIES)
    out: list[Path] = []
    for fam in fams:
        if (root / fam).is_dir():
            out.extend(iter_tasks(root / fam))
    return out


def bundled_families(ref: str | Path) -> list[str]:
    """The families whose bundled tasks include the bare id ``ref`` (empty for paths and
    ``family/id``), so a caller can say which one an ambiguous id resolved to."""
    text = str(ref)
    if "/" in text or (Path(text) / "task.toml").is_file():
        return []
    root = bundled_root()
    return [fam for fam in FAMILIES if (root / fam / text / "task.toml").is_file()]


def find_task(ref: str | Path, prefer: str | None = None) -> Path:
    """A task folder from a path, a bundled id (``vector_add``) or ``family/id``.

    A bare id bundled in several families is ambiguous unless the caller knows which family it
    can use (``prefer``: OptiML-X optimises ``.cu`` kernels, so ``c2cuda``); then that one wins.
    """
    path = Path(ref)
    if (path / "task.toml").is_file() or (path.name == "task.toml" and path.is_file()):
        return path.parent if path.name == "task.toml" else path
    text = str(ref)
    root = bundled_root()
    if "/" in text and (root / text / "task.toml").is_file():
        return root / text
    hits = [root / fam / text for fam in FAMILIES if (root / fam / text / "task.toml").is_file()]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1 and prefer is not None and (root / prefer / text / "task.toml").is_file():
        return root / prefer / text
    if len(hits) > 1:
        raise TaskFormatError(f"task id {text!r} exists in several families; say {FAMILIES[0]}/{text} or "
                              f"{FAMILIES[1]}/{text}")
    raise TaskFormatError(f"no task {text!r}: not a folder with task.toml and not a bundled task id")
