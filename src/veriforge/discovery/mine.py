"""Stage 1 -- mine candidate programs from a repository, with a reason for every file not taken.

A candidate is a Python script or notebook that (a) has an entry point (a ``__main__`` guard or a
script body that does work), (b) reads at least one dataset that exists in the repository and none
that does not, (c) writes at least one output, and (d) does not depend on the repository's own
modules (the task folder carries one standalone program). Tests, packaging scripts, package
``__init__`` files, oversized and unparsable files are skipped before analysis. When a model client
is given, it may veto candidates that are not scientific analyses (optional filter).
"""

from __future__ import annotations

import ast
import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from veriforge.discovery.iocalls import Analysis, IORef, analyse
from veriforge.discovery.notebook import NotebookError, notebook_to_script
from veriforge.discovery.pathexpr import SCRIPT_DIR

__all__ = ["Candidate", "MineConfig", "MineResult", "RepoIndex", "Skip", "instance_id_for", "mine_repository"]

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".ipynb_checkpoints",
        "node_modules",
        "venv",
        ".venv",
        "env",
        ".env",
        "site-packages",
        "build",
        "dist",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".eggs",
        "docs",
        "doc",
    }
)
PACKAGING_FILES = frozenset(
    {
        "setup.py",
        "conftest.py",
        "noxfile.py",
        "fabfile.py",
        "tasks.py",
        "manage.py",
        "versioneer.py",
        "_version.py",
        "conf.py",
    }
)
REMOTE = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)


@dataclass(frozen=True)
class MineConfig:
    """Limits of the miner: sizes are in bytes."""

    max_source_bytes: int = 200_000
    max_dataset_bytes: int = 200 * 1024 * 1024


@dataclass
class Skip:
    path: str
    reason: str


@dataclass
class Candidate:
    """A program worth turning into a task."""

    path: str  # repository-relative source path
    kind: str  # "script" | "notebook"
    instance_id: str
    source: str  # Python source (notebooks converted)
    entry: str
    datasets: list[str]  # repository-relative files/dirs the program reads
    reads: list[dict[str, Any]]
    writes: list[dict[str, Any]]
    imports: list[str]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        return cls(**data)


@dataclass
class MineResult:
    repo: str
    candidates: list[Candidate]
    skipped: list[Skip]

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "candidates": [c.path for c in self.candidates],
            "skipped": [asdict(s) for s in self.skipped],
        }


class RepoIndex:
    """Files and directories of a repository, for resolving the paths a program uses."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.files: set[str] = set()
        self.dirs: set[str] = {""}
        self.by_name: dict[str, list[str]] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            rel_dir = Path(dirpath).relative_to(self.root).as_posix()
            rel_dir = "" if rel_dir == "." else rel_dir
            for d in dirnames:
                rel = posixpath.join(rel_dir, d)
                self.dirs.add(rel)
                self.by_name.setdefault(d, []).append(rel)
            for f in sorted(filenames):
                rel = posixpath.join(rel_dir, f)
                self.files.add(rel)
                self.by_name.setdefault(f, []).append(rel)

    def exists(self, rel: str) -> bool:
        return rel in self.files or rel in self.dirs

    def locate(self, value: str, script_dir: str, prefer_script_dir: bool = False) -> str | None:
        """The repository-relative path ``value`` refers to when run from the repo root or the
        script's directory; absolute paths from another machine are matched by their longest
        path suffix that names a repository file (``/home/alice/project/data/x.csv`` -> ``data/x.csv``)."""
        if not value or REMOTE.match(value):
            return None
        abs_script_dir = str(self.root / script_dir) if script_dir else str(self.root)
        value = value.replace(SCRIPT_DIR, abs_script_dir)
        value = os.path.expanduser(value) if value.startswith("~") else value
        bases = [abs_script_dir, str(self.root)] if prefer_script_dir else [str(self.root), abs_script_dir]
        candidates = [value] if value.startswith("/") else [posixpath.join(b, value) for b in bases]
        for cand in candidates:
            norm = posixpath.normpath(cand)
            root = str(self.root)
            if norm == root:
                return ""
            if norm.startswith(root + "/"):
                rel = norm[len(root) + 1 :]
                if self.exists(rel):
                    return rel
        parts = [p for p in PurePosixPath(posixpath.normpath(value)).parts if p not in ("/", ".", "..")]
        if not parts:
            return None
        best: tuple[int, int, str] | None = None
        for rel in self.by_name.get(parts[-1], []):
            rel_parts = rel.split("/")
            k = 0
            while k < min(len(rel_parts), len(parts)) and rel_parts[-1 - k] == parts[-1 - k]:
                k += 1
            key = (-k, len(rel_parts), rel)
            if best is None or key < best:
                best = key
        return best[2] if best else None

    def size(self, rel: str) -> int:
        path = self.root / rel
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())

    def is_local_module(self, name: str, script_dir: str) -> bool:
        for base in {"", script_dir, "src"}:
            stem = posixpath.join(base, name) if base else name
            if f"{stem}.py" in self.files or f"{stem}/__init__.py" in self.files:
                return True
        return False


def instance_id_for(repo_name: str, rel_path: str) -> str:
    stem = rel_path.rsplit(".", 1)[0]
    slug = re.sub(r"[^A-Za-z0-9]+", "_", stem).strip("_").lower()
    repo = re.sub(r"[^A-Za-z0-9]+", "_", repo_name).strip("_").lower()
    return f"{repo}__{slug}"


def _source_files(index: RepoIndex) -> Iterator[str]:
    for rel in sorted(index.files):
        if rel.endswith((".py", ".ipynb")):
            yield rel


def _pre_skip(rel: str, index: RepoIndex, cfg: MineConfig) -> str | None:
    parts = rel.split("/")
    name = parts[-1]
    if (
        any(p in ("tests", "test", "testing") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
    ):
        return "test code"
    if name in PACKAGING_FILES:
        return "packaging/configuration script"
    if name == "__init__.py":
        return "package __init__ module"
    size = (index.root / rel).stat().st_size
    if size > cfg.max_source_bytes:
        return (
            f"oversized ({size / 1000:.0f} kB > {cfg.max_source_bytes / 1000:.0f} kB; generated code or data)"
        )
    return None


def _describe(ref: IORef) -> str:
    return f"line {ref.line} {ref.call}({ref.value!r})" if ref.value else f"line {ref.line} {ref.call}(...)"


def _judge(
    rel: str, kind: str, source: str, an: Analysis, index: RepoIndex, cfg: MineConfig, repo_name: str
) -> Candidate | str:
    """A candidate, or the reason ``rel`` is not one."""
    script_dir = posixpath.dirname(rel)
    if an.entry is None:
        return "library/utility module: definitions only, no entry point"
    local = [m for m in an.imports if index.is_local_module(m, script_dir)]
    if an.relative_imports:
        local.append("(relative import)")
    if local:
        return f"imports repository-local module(s) {', '.join(sorted(set(local)))}: not a standalone program"
    remote = [r for r in an.refs if r.value and REMOTE.match(r.value) and r.role == "read"]
    if remote:
        return f"reads remote data ({_describe(remote[0])}); tasks must not need the network"
    written = {posixpath.normpath(w.value) for w in an.writes if w.value}
    datasets: list[str] = []
    missing: list[IORef] = []
    unresolved: list[IORef] = []
    reads: list[dict[str, Any]] = []
    for ref in an.reads:
        if ref.value is None:
            unresolved.append(ref)
            continue
        if posixpath.normpath(ref.value) in written:
            continue  # reads back its own output
        found = index.locate(ref.value, script_dir, prefer_script_dir=kind == "notebook")
        if found is None or found == "":
            missing.append(ref)
            continue
        if found.endswith((".py", ".ipynb")):
            continue
        reads.append({**ref.to_dict(), "repo_path": found})
        if found not in datasets:
            datasets.append(found)
    if missing:
        return f"reads a dataset that is not in the repository: {_describe(missing[0])}"
    if not datasets:
        if unresolved:
            return f"input paths could not be resolved statically ({_describe(unresolved[0])})"
        return "reads no dataset from the repository"
    writes = [w.to_dict() for w in an.writes if w.value]
    if not writes:
        return "writes no outputs (prints or shows results only)"
    total = sum(index.size(d) for d in datasets)
    if total > cfg.max_dataset_bytes:
        return (
            f"datasets too large ({total // (1024 * 1024)} MB > {cfg.max_dataset_bytes // (1024 * 1024)} MB)"
        )
    warnings = [f"unresolved read {_describe(r)}" for r in unresolved]
    warnings += [f"unresolved write {_describe(w)}" for w in an.writes if not w.value]
    return Candidate(
        path=rel,
        kind=kind,
        instance_id=instance_id_for(repo_name, rel),
        source=source,
        entry=an.entry,
        datasets=sorted(datasets),
        reads=reads,
        writes=writes,
        imports=an.imports,
        warnings=warnings,
    )


def load_source(root: Path, rel: str) -> tuple[str, str]:
    """(kind, python source) of a script or notebook (raises NotebookError / UnicodeDecodeError)."""
    if rel.endswith(".ipynb"):
        return "notebook", notebook_to_script(root / rel)
    return "script", (root / rel).read_text(encoding="utf-8")


def mine_repository(
    root: str | Path, repo_name: str | None = None, cfg: MineConfig | None = None, model_filter: Any = None
) -> MineResult:
    """Mine ``root``. ``model_filter(candidate) -> (keep, reason)`` is the optional model veto."""
    cfg = cfg or MineConfig()
    root = Path(root)
    index = RepoIndex(root)
    repo_name = repo_name or index.root.name
    candidates: list[Candidate] = []
    skipped: list[Skip] = []
    for rel in _source_files(index):
        reason = _pre_skip(rel, index, cfg)
        if reason:
            skipped.append(Skip(rel, reason))
            continue
        try:
            kind, source = load_source(index.root, rel)
            tree = ast.parse(source)
        except (NotebookError, UnicodeDecodeError) as exc:
            skipped.append(Skip(rel, f"unreadable: {exc}"))
            continue
        except SyntaxError as exc:
            skipped.append(Skip(rel, f"cannot parse (line {exc.lineno}: {exc.msg}; Python 2 code?)"))
            continue
        file_path = str(index.root / rel)
        an = analyse(source, file_path=file_path, tree=tree)
        outcome = _judge(rel, kind, source, an, index, cfg, repo_name)
        if isinstance(outcome, str):
            skipped.append(Skip(rel, outcome))
            continue
        if model_filter is not None:
            keep, why = model_filter(outcome)
            if not keep:
                skipped.append(Skip(rel, f"model filter: {why}"))
                continue
        candidates.append(outcome)
    return MineResult(repo=repo_name, candidates=candidates, skipped=skipped)
