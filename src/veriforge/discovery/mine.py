"""Stage 1 -- mine candidate programs from a repository, with a reason for every file not taken.

A candidate is a Python script or notebook that (a) has an entry point (a ``__main__`` guard or a
script body that does work), (b) reads at least one dataset that exists in the repository and none
that does not, and (c) writes at least one output. Repository-local modules it imports are
vendored with the task (their transitive closure, see :mod:`veriforge.discovery.localmods`) unless
they are too large or do fixed-path I/O of their own; relative imports (a module inside a package)
are refused. Tests, packaging scripts, package
``__init__`` files, oversized and unparsable files are skipped before analysis; a file *named* like
a test (``t_test.py``) is only skipped when its content is test code (see :func:`is_test_module`),
and a notebook's size is that of its code cells. When a model client
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

from veriforge.discovery.display import MPL_CAPTURED, capture_figures, capture_notes, python2_to_3
from veriforge.discovery.helperio import helper_fixed_io, helpers_draw
from veriforge.discovery.iocalls import Analysis, IORef, analyse, top_level_imports
from veriforge.discovery.localmods import helper_io_calls, local_closure
from veriforge.discovery.notebook import NotebookError, notebook_code_size, notebook_to_script
from veriforge.discovery.pathexpr import SCRIPT_DIR

__all__ = [
    "Candidate",
    "MineConfig",
    "MineResult",
    "RepoIndex",
    "Resolution",
    "Skip",
    "instance_id_for",
    "is_test_module",
    "mine_repository",
]

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
NO_OUTPUTS = "writes no outputs (prints or shows results only)"
CAPTURED = MPL_CAPTURED  # matplotlib; plotly figures are written as .json (display.PLOTLY_CAPTURED)
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
    # inputs whose name matched several repository files: {"line", "call", "value", "chosen",
    # "alternatives", "rule"} -- the choice is explicit and reported, never silently alphabetical
    ambiguous_inputs: list[dict[str, Any]] = field(default_factory=list)
    # repository-local helper modules the program imports (transitively), vendored under lib/:
    # LocalModule dicts {"name", "path", "dest", "sha256", "size"} (see discovery.localmods)
    local_modules: list[dict[str, Any]] = field(default_factory=list)
    # program call name -> [position, keyword, role] of helper functions that read/write the path
    # they are given (localmods.helper_io_calls): their arguments are rewritten like open()'s
    helper_io: dict[str, list[Any]] = field(default_factory=dict)
    # how the source differs from the repository's file: Python 2 conversion, displayed figures
    # saved as outputs (see discovery.display); also in the warnings and task.json
    source_changes: list[str] = field(default_factory=list)
    # repository files inside a dataset folder that the program itself writes: never copied
    dataset_excludes: list[str] = field(default_factory=list)

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


@dataclass(frozen=True)
class Resolution:
    """A resolved path: the chosen repository path, the equally good ones not chosen, and why."""

    path: str | None
    alternatives: list[str] = field(default_factory=list)
    rule: str = ""


def _steps(a: str, b: str) -> int:
    """Directory steps between two repository folders ("" is the root): up to the common
    ancestor, then down."""
    pa = [p for p in a.split("/") if p]
    pb = [p for p in b.split("/") if p]
    common = 0
    while common < min(len(pa), len(pb)) and pa[common] == pb[common]:
        common += 1
    return len(pa) + len(pb) - 2 * common


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

    def is_folder(self, rel: str | None) -> bool:
        """Whether ``rel`` is a folder of the repository other than its root."""
        return bool(rel) and rel in self.dirs

    def exists(self, rel: str) -> bool:
        return rel in self.files or rel in self.dirs

    def locate(self, value: str, script_dir: str, prefer_script_dir: bool = False) -> str | None:
        """The repository-relative path ``value`` refers to (see :meth:`resolve`)."""
        return self.resolve(value, script_dir, prefer_script_dir).path

    def resolve(self, value: str, script_dir: str, prefer_script_dir: bool = False) -> Resolution:
        """Where ``value`` points when run from the repo root or the script's directory.

        Absolute paths from another machine are matched by their longest path suffix that names a
        repository file (``/home/alice/project/data/x.csv`` -> ``data/x.csv``). When several
        repository files fit equally well (two experiments each with a ``data/results.csv``, or a
        relative path that exists under both the root and the script's folder), the one nearest the
        script -- fewest directory steps between the two folders -- is chosen and the others are
        returned as ``alternatives`` so the choice can be reported: picking alphabetically would
        silently give the task another experiment's data.
        """
        if not value or REMOTE.match(value):
            return Resolution(None)
        abs_script_dir = str(self.root / script_dir) if script_dir else str(self.root)
        value = value.replace(SCRIPT_DIR, abs_script_dir)
        value = os.path.expanduser(value) if value.startswith("~") else value
        bases = [abs_script_dir, str(self.root)] if prefer_script_dir else [str(self.root), abs_script_dir]
        direct = [value] if value.startswith("/") else [posixpath.join(b, value) for b in bases]
        root = str(self.root)
        hits: list[str] = []
        for cand in direct:
            norm = posixpath.normpath(cand)
            if norm == root:
                return Resolution("")
            if norm.startswith(root + "/"):
                rel = norm[len(root) + 1 :]
                if self.exists(rel) and rel not in hits:
                    hits.append(rel)
        if hits:
            # the first base in run order wins (what the program reads when run the usual way)
            rule = "script folder first" if prefer_script_dir else "repository root first"
            return Resolution(hits[0], hits[1:], rule if len(hits) > 1 else "")
        parts = [p for p in PurePosixPath(posixpath.normpath(value)).parts if p not in ("/", ".", "..")]
        if not parts:
            return Resolution(None)
        scored: list[tuple[int, int, str]] = []
        partial: list[tuple[int, int, str]] = []
        for rel in self.by_name.get(parts[-1], []):
            rel_parts = rel.split("/")
            k = 0
            while k < min(len(rel_parts), len(parts)) and rel_parts[-1 - k] == parts[-1 - k]:
                k += 1
            # whole: the shorter of the two paths agrees entirely (the repository file sits where the
            # program's path says, give or take the folder it was run from); otherwise the program's
            # path names another folder and this is only a file with the same name
            whole = k == min(len(rel_parts), len(parts))
            (scored if whole else partial).append((-k, _steps(script_dir, posixpath.dirname(rel)), rel))
        if not scored and not partial:
            return Resolution(None)
        if not scored:
            # only same-named files in other folders: the program's own file may be absent (another
            # experiment's copy is then used), so the choice is always reported, even without a tie
            partial.sort()
            k = -partial[0][0]
            return Resolution(partial[0][2], [rel for _k, _d, rel in partial[1:]],
                              f"partial path match: only the last {k} part(s) of the path agree; "
                              "longest match, then nearest to the script")
        scored.sort()
        best_k = scored[0][0]
        tied = [rel for k, _d, rel in scored if k == best_k]
        rule = "longest matching path suffix, then nearest to the script" if len(tied) > 1 else ""
        return Resolution(tied[0], tied[1:], rule)

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


_TEST_FRAMEWORKS = frozenset({"pytest", "unittest", "nose", "nose2", "hypothesis", "doctest"})


def _test_named(name: str) -> bool:
    return name.startswith("test_") or name.endswith("_test.py") or name.endswith("_tests.py")


def is_test_module(tree: ast.Module) -> str | None:
    """Why a module is test code (a test framework import, ``test_*`` functions a runner would
    collect, ``Test*``/``TestCase`` classes), or None.

    File names alone are not evidence: statistics scripts are routinely called ``t_test.py``,
    ``chi2_test.py`` or ``ab_test.py``; what makes a module a test is what pytest/unittest would
    collect from it.
    """
    imports, _relative = top_level_imports(tree)
    frameworks = sorted(set(imports) & _TEST_FRAMEWORKS)
    if frameworks:
        return f"imports {', '.join(frameworks)}"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            return f"defines test function {node.name}()"
        if isinstance(node, ast.ClassDef):
            bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
            if node.name.startswith("Test") or "TestCase" in bases:
                return f"defines test class {node.name}"
    return None


def _source_size(rel: str, index: RepoIndex) -> int:
    """Bytes of code: a notebook is measured by its code cells, not its JSON with embedded
    outputs (a 5 MB notebook of plots may hold 200 lines of code)."""
    if rel.endswith(".ipynb"):
        try:
            return notebook_code_size(index.root / rel)
        except NotebookError:
            pass  # unreadable: reported when it is loaded
    return (index.root / rel).stat().st_size


def _pre_skip(rel: str, index: RepoIndex, cfg: MineConfig) -> str | None:
    parts = rel.split("/")
    name = parts[-1]
    if any(p in ("tests", "test", "testing") for p in parts[:-1]):
        return "test code"
    if name in PACKAGING_FILES:
        return "packaging/configuration script"
    if name == "__init__.py":
        return "package __init__ module"
    size = _source_size(rel, index)
    if size > cfg.max_source_bytes:
        what = "code cells " if rel.endswith(".ipynb") else ""
        return (
            f"oversized ({what}{size / 1000:.0f} kB > {cfg.max_source_bytes / 1000:.0f} kB; "
            "generated code or data)"
        )
    return None


def _describe(ref: IORef) -> str:
    return f"line {ref.line} {ref.call}({ref.value!r})" if ref.value else f"line {ref.line} {ref.call}(...)"


def inside_inputs(folder: str, inputs: list[str], index: RepoIndex, script_dir: str) -> bool:
    """Whether a folder the program writes run-time-named files into is (inside) one it reads:
    those writes cannot be redirected apart from the inputs, so they are no outputs."""
    found = index.locate(folder, script_dir)
    return found is not None and any(found == d or found.startswith(d.rstrip("/") + "/") for d in inputs)


def _judge(
    rel: str,
    kind: str,
    source: str,
    tree: ast.Module,
    an: Analysis,
    index: RepoIndex,
    cfg: MineConfig,
    repo_name: str,
    captured: bool = False,
) -> Candidate | str:
    """A candidate, or the reason ``rel`` is not one."""
    script_dir = posixpath.dirname(rel)
    if an.entry is None:
        return "library/utility module: definitions only, no entry point"
    if an.relative_imports:
        return "uses relative imports: part of a package, not a standalone program"
    closure = local_closure(index, rel, tree, an.imports)
    if isinstance(closure, str):
        return closure
    local_modules, helper_imports = closure
    helper_io = helper_io_calls(index, [m.to_dict() for m in local_modules], tree) if local_modules else {}
    if helper_io:  # load_trial("data/x.csv"): the helper reads what the program names
        an = analyse(source, file_path=str(index.root / rel), tree=tree, extra_calls=helper_io)
    # helpers that read/write fixed paths themselves: the calls the program can reach count as its own
    helper_refs: list[IORef] = []
    if any(m.fixed_io for m in local_modules):
        for helper in helper_fixed_io(index.root, [m.to_dict() for m in local_modules], tree):
            helper_refs += helper.reached
    remote = [r for r in an.refs + helper_refs if r.value and REMOTE.match(r.value) and r.role == "read"]
    if remote:
        return f"reads remote data ({_describe(remote[0])}); tasks must not need the network"
    an_refs = an.refs + helper_refs
    # files it writes (a folder it writes run-time-named files into may still be an input folder)
    written = {posixpath.normpath(w.value) for w in an_refs if w.role == "write" and w.value and not w.listing}
    datasets: list[str] = []
    missing: list[IORef] = []
    unresolved: list[IORef] = []
    reads: list[dict[str, Any]] = []
    ambiguous: list[dict[str, Any]] = []
    for ref in [r for r in an_refs if r.role == "read"]:
        if ref.value is None:
            # 'models' + os.sep + name: a read from the folder the known prefix names, if it is one
            folder = ref.as_folder_read(lambda v: index.is_folder(index.locate(v, script_dir)))
            if folder is None:
                unresolved.append(ref)
                continue
            ref = folder
        if posixpath.normpath(ref.value) in written:
            continue  # reads back its own output
        target = ref.folder or ref.value
        res = index.resolve(target, script_dir, prefer_script_dir=kind == "notebook")
        found = res.path
        if ref.listing and not index.is_folder(found) and any(
            w == target or w.startswith(target.rstrip("/") + "/") for w in written
        ):
            continue  # lists a folder only it writes into (not one of the repository's)
        if ref.listing and found == "":
            continue  # a listing of the script's own folder or the repository root is no dataset
        if found is None or found == "":
            missing.append(ref)
            continue
        if ref.listing and found not in index.dirs:
            missing.append(ref)  # a "folder" that is a file: the program's path means something else
            continue
        if found.endswith((".py", ".ipynb")):
            continue
        if res.alternatives or res.rule.startswith("partial"):
            ambiguous.append(
                {
                    "line": ref.line,
                    "call": ref.call,
                    "value": ref.value,
                    "chosen": found,
                    "alternatives": res.alternatives,
                    "rule": res.rule,
                }
            )
        reads.append({**ref.to_dict(), "repo_path": found})
        if found not in datasets:
            datasets.append(found)
    if missing:
        return f"reads a dataset that is not in the repository: {_describe(missing[0])}"
    if not datasets:
        if unresolved:
            return f"input paths could not be resolved statically ({_describe(unresolved[0])})"
        return "reads no dataset from the repository"
    writes = [
        w.to_dict() | ({"folder": True} if w.listing else {})
        for w in an_refs
        if w.role == "write" and w.value and not (w.listing and inside_inputs(w.value, datasets, index, script_dir))
    ]
    if not writes and not captured:
        dynamic = [w for w in an.writes if not w.value]
        if dynamic:  # it does write, to a path built at run time: say so, not "writes no outputs"
            return f"output paths could not be resolved statically ({_describe(dynamic[0])})"
        return NO_OUTPUTS
    # files the program writes that sit in a dataset folder (the author's committed results): the
    # task must not ship them as inputs -- they would be the answer
    excludes = sorted(
        {
            hit
            for w in writes
            if (res := index.resolve(w["value"], script_dir)).path
            and not res.rule.startswith("partial")  # the same name in another folder is another file
            and (hit := res.path) in index.files
            and any(hit.startswith(d.rstrip("/") + "/") for d in datasets)
        }
    )
    total = sum(index.size(d) for d in datasets)
    if total > cfg.max_dataset_bytes:
        return (
            f"datasets too large ({total // (1024 * 1024)} MB > {cfg.max_dataset_bytes // (1024 * 1024)} MB)"
        )
    warnings = [f"unresolved read {_describe(r)}" for r in unresolved]
    warnings += [f"unresolved write {_describe(w)}" for w in an.writes if not w.value]
    warnings += [
        f"ambiguous input line {a['line']} {a['call']}({a['value']!r}): chose {a['chosen']} ({a['rule']})"
        + (f" over {', '.join(a['alternatives'])}" if a["alternatives"] else "")
        for a in ambiguous
    ]
    return Candidate(
        path=rel,
        kind=kind,
        instance_id=instance_id_for(repo_name, rel),
        source=source,
        entry=an.entry,
        datasets=sorted(datasets),
        reads=reads,
        writes=writes,
        # what the environment must install: the program's and its helpers' imports, minus the helpers
        imports=sorted((set(an.imports) | set(helper_imports)) - {m.name for m in local_modules}),
        warnings=warnings,
        ambiguous_inputs=ambiguous,
        local_modules=[m.to_dict() for m in local_modules],
        helper_io=helper_io,
        dataset_excludes=excludes,
    )


def load_source(root: Path, rel: str) -> tuple[str, str]:
    """(kind, python source) of a script or notebook (raises NotebookError / UnicodeDecodeError)."""
    if rel.endswith(".ipynb"):
        return "notebook", notebook_to_script(root / rel)
    return "script", (root / rel).read_text(encoding="utf-8-sig")  # a UTF-8 BOM (Windows editors) is no syntax error


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
        except (NotebookError, UnicodeDecodeError) as exc:
            skipped.append(Skip(rel, f"unreadable: {exc}"))
            continue
        changes: list[str] = []
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            converted = python2_to_3(source)
            if converted is None:
                skipped.append(Skip(rel, f"cannot parse (line {exc.lineno}: {exc.msg}; not Python 2 either)"))
                continue
            source, tree = converted, ast.parse(converted)
            changes.append(f"converted from Python 2 by the 2to3 fixers (line {exc.lineno}: {exc.msg})")
        if _test_named(posixpath.basename(rel)):
            why = is_test_module(tree)
            if why:
                skipped.append(Skip(rel, f"test code ({why})"))
                continue
        file_path = str(index.root / rel)
        an = analyse(source, file_path=file_path, tree=tree)
        outcome = _judge(rel, kind, source, tree, an, index, cfg, repo_name)
        if outcome == NO_OUTPUTS:
            closure = local_closure(index, rel, tree, an.imports)
            in_helpers = (
                not isinstance(closure, str)
                and bool(closure[0])
                and helpers_draw(index.root, [m.to_dict() for m in closure[0]], tree)
            )
            captured = capture_figures(source, tree, an.imports, kind, helpers_draw=in_helpers)
            if captured is not None:  # it plots and only displays: its figures become the outputs
                cap_tree = ast.parse(captured)
                an = analyse(captured, file_path=file_path, tree=cap_tree)
                outcome = _judge(rel, kind, captured, cap_tree, an, index, cfg, repo_name, captured=True)
                changes.extend(capture_notes(captured))
        if isinstance(outcome, Candidate) and changes:
            outcome.source_changes = changes
            outcome.warnings.extend(changes)
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
