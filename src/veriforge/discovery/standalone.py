"""Stage 2 -- make a mined program standalone: read from ``datasets/``, write to ``pred_results/``.

The rewrite is deterministic and AST-guided. For each read/write call the provenance chain of its
path (see :mod:`veriforge.discovery.pathexpr`) is walked from the root literal outwards to the first
node used *only* for inputs (or only for outputs); that node -- a string literal, an argparse default,
``os.path.join(BASE, "data")`` -- is replaced in the source text by a new literal:

- inputs: ``datasets/<path of the same file or folder in the repository>``
  (hard-coded absolute paths from another machine are matched by path suffix);
- outputs: ``pred_results`` for an output folder, ``pred_results/<name>`` for an output file.

Only those spans of text change, so comments, formatting and the program's logic stay as they were.
The result is re-analysed and must read only under ``datasets/`` and write only under
``pred_results/``; otherwise a :class:`RewriteError` says which call could not be redirected. A model
may be asked to do the rewrite when the deterministic one fails (optional).
"""

from __future__ import annotations

import ast
import itertools
import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veriforge.discovery.errors import RewriteError
from veriforge.discovery.iocalls import Analysis, IORef, analyse
from veriforge.discovery.mine import Candidate, RepoIndex, inside_inputs

__all__ = [
    "DATASETS",
    "PRED",
    "Standalone",
    "apply_replacements",
    "check_standalone",
    "make_standalone",
    "program_name_for",
]

DATASETS = "datasets"
PRED = "pred_results"


@dataclass
class Standalone:
    program: str
    program_name: str
    datasets: list[str]  # repository-relative paths copied to datasets/<path>
    outputs: list[str]  # expected outputs, relative to the task folder ("pred_results/x.csv")
    replacements: list[dict[str, Any]] = field(default_factory=list)
    method: str = "deterministic"
    warnings: list[str] = field(default_factory=list)
    # vendored helpers whose fixed paths were redirected: lib/ destination -> new text
    lib: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in ("program", "program_name", "datasets", "outputs", "replacements", "method", "warnings", "lib")
        }


def program_name_for(candidate: Candidate) -> str:
    name = posixpath.basename(candidate.path)
    return name[: -len(".ipynb")] + ".py" if name.endswith(".ipynb") else name


def _norm(p: str) -> str:
    return posixpath.normpath(p) if p else p


def _tail(full: str, prefix: str) -> str | None:
    """``full`` relative to ``prefix`` ("" when equal), or None if it is not under it."""
    full, prefix = _norm(full), _norm(prefix)
    if full == prefix:
        return ""
    if prefix in ("", "."):
        return full
    if full.startswith(prefix.rstrip("/") + "/"):
        return full[len(prefix.rstrip("/")) + 1 :]
    return None


def _point(
    ref: IORef, roles: dict[int, set[str]], role: str, prefer_tail: str | None = None
) -> tuple[ast.AST, str] | None:
    """The node to replace for ``ref``: the innermost node of its provenance chain that is used
    only for this role *and* whose value is an ancestor of (or equal to) the full path.

    The ancestor condition matters for ``__file__``-relative idioms: in
    ``os.path.join(os.path.dirname(__file__), "..", "data", "x.csv")`` the ``__file__`` and
    ``dirname(...)`` nodes are used only for reading, but the path climbs out of them with ``..``,
    so no literal put in their place could make the program read ``datasets/data/x.csv``; the
    ``join(...)`` (or, for ``Path(__file__).resolve().parent.parent / "data"``, the ``.parent.parent``
    that names the repository root) is the first node a literal can stand for.

    ``prefer_tail``: among the eligible nodes take the one that leaves exactly this tail, if any --
    for an output file its folder (``RESULTS = ROOT / "results"`` becomes ``pred_results``, not
    ``ROOT`` becoming ``pred_results`` and the output landing in ``pred_results/results/``), for a
    ``mkdir`` the folder itself.
    """
    assert ref.path is not None
    full = _norm(ref.value or "")
    eligible = [
        (node, value, _tail(full, value))
        for node, value in ref.path.chain
        if roles.get(id(node)) == {role} and _tail(full, value) is not None
    ]
    if prefer_tail is not None:
        for node, value, tail in eligible:
            if tail == prefer_tail:
                return node, value
    return (eligible[0][0], eligible[0][1]) if eligible else None


_PATHLIB_CALLS = frozenset(
    {
        "Path",
        "PurePath",
        "PosixPath",
        "joinpath",
        "resolve",
        "absolute",
        "expanduser",
        "with_name",
        "with_suffix",
    }
)


def _use_site(ref: IORef, chosen: dict[int, Any]) -> tuple[ast.AST, str] | None:
    """The call's own path argument, when no node of its provenance serves one role only:
    ``path = '../data/'`` both read (``load(path)``) and written into (``path + 'out.csv'``) is
    left alone, and the argument expression of *this* call becomes the literal. Its value is
    statically known, so the program reads or writes exactly what it did, redirected. Not when
    the argument is a node another call's rewrite already replaced."""
    if ref.node is None or ref.value is None or any(id(n) in chosen for n in ast.walk(ref.node)):
        return None
    return ref.node, ref.value


def _is_pathlike(node: ast.AST) -> bool:
    """True when ``node`` evaluates to a ``pathlib`` object (so its replacement must be one too)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return True
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        return True
    if isinstance(node, ast.Subscript):  # Path(...).parents[k]
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in _PATHLIB_CALLS
    return False


def _path_ctor(tree: ast.Module) -> str:
    """How this module can spell ``pathlib.Path`` without adding an import."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "pathlib":
            for alias in node.names:
                if alias.name == "Path":
                    return alias.asname or "Path"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "pathlib":
                    return f"{alias.asname or 'pathlib'}.Path"
    return '__import__("pathlib").Path'


def apply_replacements(source: str, replacements: list[tuple[ast.AST, str]], path_ctor: str = "") -> str:
    """Replace each node's source span with the new literal (AST columns are UTF-8 byte offsets).

    A node that held a ``pathlib`` object is replaced by ``Path("...")`` (``path_ctor``) so code
    such as ``DATA / "x.csv"`` keeps working.
    """
    lines = source.encode("utf-8").splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    data = source.encode("utf-8")
    spans = []
    for node, new in replacements:
        start = offsets[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = offsets[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        text = json.dumps(new)
        if path_ctor and _is_pathlike(node):
            text = f"{path_ctor}({text})"
        spans.append((start, end, text.encode("utf-8")))
    spans.sort()
    for (_s1, e1, _t1), (s2, _e2, _t2) in itertools.pairwise(spans):
        if s2 < e1:
            raise RewriteError("overlapping path rewrites")
    for start, end, text in reversed(spans):
        data = data[:start] + text + data[end:]
    return data.decode("utf-8")


def _lists_own_output(ref: IORef, written: set[str], index: RepoIndex, script_dir: str) -> bool:
    """Whether ``ref`` lists a folder only the program itself writes into (``os.listdir('out')``);
    a repository folder it also writes into is an input folder (see mine._judge)."""
    folder = _norm(ref.folder or "") if ref.listing else ""
    if not folder or index.is_folder(index.locate(folder, script_dir)):
        return False
    return any(w == folder or w.startswith(folder.rstrip("/") + "/") for w in written)


@dataclass
class _Redirected:
    """One module's source with its paths redirected, and what the redirection found."""

    text: str
    datasets: list[str]
    outputs: list[str]
    replacements: list[dict[str, Any]]
    warnings: list[str]
    missed: list[IORef]  # fixed-path reads with no repository file behind them (left unchanged)


def _redirect(
    an: Analysis,
    source: str,
    index: RepoIndex,
    script_dir: str,
    kind: str,
    *,
    skip_lines: set[int] | frozenset[int] = frozenset(),
    declare: Callable[[IORef], bool] = lambda _ref: True,
) -> _Redirected:
    """Redirect the reads and writes of one analysed module (the program, or a vendored helper).

    ``script_dir``: the program's folder -- the working directory relative paths mean, for a helper
    too. ``skip_lines``: calls left alone (a helper's ``__main__`` demo). ``declare``: whether a
    redirected write is one of the task's outputs (a helper's writes in code the program never runs
    are redirected but expected of nobody).
    """
    refs = [r for r in an.refs if r.line not in skip_lines]
    reads_in = [r for r in refs if r.role == "read"]
    written = {_norm(w.value) for w in refs if w.role == "write" and w.value and not w.listing}
    missed: list[IORef] = []
    warnings: list[str] = []
    reads: list[tuple[IORef, str]] = []
    for ref in reads_in:
        if ref.value is None:
            # 'models' + os.sep + name: the known folder part is rewritten, if it is a repository folder
            folder = ref.as_folder_read(lambda v: index.is_folder(index.locate(v, script_dir)))
            if folder is None:
                continue
            ref = folder
        if _norm(ref.value or "") in written or _lists_own_output(ref, written, index, script_dir):
            continue
        found = index.locate(ref.folder or ref.value, script_dir, prefer_script_dir=kind == "notebook")
        if found is None:
            missed.append(ref)
        elif not found.endswith((".py", ".ipynb")):
            reads.append((ref, found))
    writes = [w for w in refs if w.role == "write" and w.value]
    inputs = [found for _ref, found in reads]
    for w in [w for w in writes if w.listing]:
        # files named at run time written among the inputs: no literal can send them elsewhere
        # without moving the inputs too, so they stay where they are (and are no outputs)
        if inside_inputs(w.value or "", inputs, index, script_dir):
            writes.remove(w)
            warnings.append(
                f"line {w.line} {w.call}: files named at run time go into {w.value!r}, "
                "which the program also reads; left unchanged"
            )
    # a listing of a folder the program writes to is redirected with that folder (like a mkdir)
    mkdirs = [m for m in refs if m.role == "mkdir" and m.value] + [
        r for r in reads_in if _lists_own_output(r, written, index, script_dir)
    ]
    roles: dict[int, set[str]] = {}
    for ref, _ in reads:
        for node, _v in ref.path.chain:  # type: ignore[union-attr]
            roles.setdefault(id(node), set()).add("read")
    for ref in [*writes, *mkdirs]:
        for node, _v in ref.path.chain:  # type: ignore[union-attr]
            roles.setdefault(id(node), set()).add("write")

    chosen: dict[int, tuple[ast.AST, str, str]] = {}  # node id -> (node, old value, new literal)

    def choose(node: ast.AST, old: str, new: str, ref: IORef) -> None:
        if old.endswith(("/", "\\")) and len(old) > 1 and not new.endswith("/"):
            new += "/"  # a folder written with its separator is used as `folder + "name"`: keep the separator
        prev = chosen.get(id(node))
        if prev is not None and prev[2] != new:
            raise RewriteError(
                f"line {ref.line}: one path expression would need two rewrites ({prev[2]!r}, {new!r})"
            )
        chosen[id(node)] = (node, old, new)

    datasets: list[str] = []
    for ref, found in reads:
        point = _point(ref, roles, "read") or _use_site(ref, chosen)
        if point is None:
            raise RewriteError(f"line {ref.line} {ref.call}: input path shares its root with an output path")
        node, old = point
        tail = _tail(ref.value or "", old)
        if tail is None:
            raise RewriteError(f"line {ref.line} {ref.call}: cannot relate {ref.value!r} to {old!r}")
        if tail == "" and ref.listing:
            # the node holds the whole pattern ("../data/*.csv"): keep the pattern after the folder
            pattern = _tail(ref.value or "", ref.folder or "")
            point_rel = posixpath.join(found, pattern) if pattern else found
        elif tail == "":
            point_rel = found
        elif found == tail or found.endswith("/" + tail):
            point_rel = found[: len(found) - len(tail)].rstrip("/")
        else:
            located = index.locate(old, script_dir, prefer_script_dir=kind == "notebook")
            if located is None:
                raise RewriteError(f"line {ref.line} {ref.call}: {old!r} is not a folder of the repository")
            point_rel = located
        choose(node, old, posixpath.join(DATASETS, point_rel) if point_rel else DATASETS, ref)
        if found not in datasets:
            datasets.append(found)

    outputs: list[str] = []
    new_full: dict[str, str] = {}
    for ref in writes:
        if ref.listing:
            # files named at run time inside a known folder: the folder becomes pred_results; which
            # files the task expects is what the gold run writes there
            point = _point(ref, roles, "write", prefer_tail="")
            if point is None:
                warnings.append(
                    f"line {ref.line} {ref.call}: files named at run time go into {ref.value!r}, "
                    "which the program also reads; left unchanged"
                )
                continue
            node, old = point
            tail = _tail(ref.value or "", old)
            choose(node, old, PRED, ref)
            new_full[_norm(ref.value or "")] = posixpath.join(PRED, tail) if tail else PRED
            continue
        point = _point(ref, roles, "write", prefer_tail=posixpath.basename(_norm(ref.value or ""))) or _use_site(
            ref, chosen
        )
        if point is None:
            raise RewriteError(f"line {ref.line} {ref.call}: output path shares its root with an input path")
        node, old = point
        tail = _tail(ref.value or "", old)
        if tail is None:
            raise RewriteError(f"line {ref.line} {ref.call}: cannot relate {ref.value!r} to {old!r}")
        if tail == "":
            new, out = posixpath.join(PRED, posixpath.basename(_norm(old))), None
            out = new
        else:
            new, out = PRED, posixpath.join(PRED, tail)
        choose(node, old, new, ref)
        if not declare(ref):
            pass  # redirected, but code the program never runs names no output
        elif out in outputs:
            warnings.append(f"two writes produce {out}")
        else:
            outputs.append(out)
        new_full[_norm(ref.value or "")] = out

    for ref in mkdirs:
        if any(id(node) in chosen for node, _v in ref.path.chain):  # type: ignore[union-attr]
            continue  # its folder expression is already rewritten for an output
        point = _point(ref, roles, "write", prefer_tail="")
        if point is None:
            continue
        node, old = point
        matches = [new for orig, new in new_full.items() if posixpath.dirname(orig) == _norm(ref.value or "")]
        if matches:
            choose(node, old, posixpath.dirname(matches[0]), ref)
        else:
            warnings.append(
                f"line {ref.line}: {ref.call}({ref.value!r}) left unchanged (no output goes there)"
            )

    # os.chdir(...) would move the program away from the task folder, where datasets/ and
    # pred_results/ are (notebooks exported from Colab open with os.chdir('/content/drive/...')):
    # every path above was resolved and rewritten relative to the task folder, so the change of
    # directory becomes os.chdir(".").
    for node in ast.walk(an.tree):
        if getattr(node, "lineno", 0) in skip_lines:
            continue
        if (
            isinstance(node, ast.Call)
            and len(node.args) == 1
            and not node.keywords
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "chdir")
                or (isinstance(node.func, ast.Name) and node.func.id == "chdir")
            )
        ):
            arg = node.args[0]
            pv = an.evaluator.evaluate(arg)
            old = pv.value if pv is not None else ast.unparse(arg)
            if old != ".":
                chosen[id(arg)] = (arg, old, ".")
                warnings.append(
                    f"line {node.lineno}: chdir({old!r}) replaced by chdir('.'): tasks run from their folder"
                )

    replacements = [(node, new) for node, _old, new in chosen.values()]
    return _Redirected(
        text=apply_replacements(source, replacements, _path_ctor(an.tree)),
        datasets=datasets,
        outputs=outputs,
        replacements=sorted(
            ({"line": node.lineno, "old": old, "new": new} for node, old, new in chosen.values()),  # type: ignore[attr-defined]
            key=lambda r: (r["line"], r["old"]),
        ),
        warnings=warnings,
        missed=missed,
    )


def make_standalone(candidate: Candidate, repo_root: str | Path) -> Standalone:
    """Rewrite ``candidate`` deterministically (raises :class:`RewriteError` when it cannot).

    Vendored helpers that read or write fixed paths are redirected the same way; their new text is
    in :attr:`Standalone.lib` (what ``lib/`` must hold instead of the repository's copy).
    """
    index = RepoIndex(Path(repo_root))
    script_dir = posixpath.dirname(candidate.path)
    an = analyse(
        candidate.source, file_path=str(index.root / candidate.path), extra_calls=candidate.helper_io or None
    )
    prog = _redirect(an, candidate.source, index, script_dir, candidate.kind)
    header = f"# Standalone version of {candidate.path} (D3-Gym): reads {DATASETS}/, writes {PRED}/.\n"
    datasets, outputs, warnings = list(prog.datasets), list(prog.outputs), list(prog.warnings)
    replacements = list(prog.replacements)
    lib: dict[str, str] = {}
    if any(m.get("fixed_io") for m in candidate.local_modules):
        from veriforge.discovery.helperio import helper_fixed_io

        for helper in helper_fixed_io(index.root, candidate.local_modules, an.tree):
            reached = {id(r) for r in helper.reached}
            red = _redirect(
                helper.analysis,
                helper.source,
                index,
                script_dir,
                candidate.kind,
                skip_lines=helper.demo,
                declare=lambda r, reached=reached: id(r) in reached,  # type: ignore[misc]
            )
            where = helper.module["path"]
            missed = [r for r in red.missed if id(r) in reached]
            if missed:
                r = missed[0]
                raise RewriteError(f"{where} line {r.line} {r.call}({r.value!r}): no such file in the repository")
            lib[helper.module["dest"]] = red.text
            datasets += [d for d in red.datasets if d not in datasets]
            for out in red.outputs:
                if out in outputs:
                    warnings.append(f"two writes produce {out} (one in {where})")
                else:
                    outputs.append(out)
            replacements += [{**r, "file": f"lib/{helper.module['dest']}"} for r in red.replacements]
            warnings += [f"{where}: {w}" for w in red.warnings]
            warnings += [
                f"{where}: redirected {r.call}({r.value!r}) on line {r.line}, which the program never calls"
                for r in helper.unreached
                if r.role == "write"
            ]
    result = Standalone(
        program=header + prog.text,
        program_name=program_name_for(candidate),
        datasets=sorted(datasets),
        outputs=outputs,
        replacements=replacements,
        warnings=warnings + list(candidate.warnings),
        lib=lib,
    )
    problems = check_standalone(result.program)
    if problems:
        raise RewriteError("; ".join(problems))
    return result


def check_standalone(program: str) -> list[str]:
    """Why ``program`` is not standalone (empty when every resolved read is under datasets/ and every
    resolved write under pred_results/)."""
    try:
        an = analyse(program)
    except SyntaxError as exc:
        return [f"rewritten program does not parse: {exc}"]
    problems = []
    for ref in an.reads:
        if ref.value and not (
            _norm(ref.value) in (DATASETS, PRED) or _norm(ref.value).startswith((DATASETS + "/", PRED + "/"))
        ):
            problems.append(f"line {ref.line} {ref.call} still reads {ref.value!r}")
    for ref in an.writes:
        if ref.listing:
            continue  # files named at run time: redirected when their folder could be (see _redirect)
        if ref.value and not _norm(ref.value).startswith(PRED + "/"):
            problems.append(f"line {ref.line} {ref.call} still writes {ref.value!r}")
    return problems
