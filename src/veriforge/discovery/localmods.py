"""Repository-local helper modules a candidate imports, vendored into its task.

Research analyses routinely keep shared code next to the scripts (``analysis_aux.py``, a ``utils/``
or ``rules/`` package, a plotting-style module). Refusing every such script lost a third of the
candidates in the yield survey (issue 18), so the miner now resolves the *transitive* closure of
local imports and the task carries those modules under ``lib/`` (on ``PYTHONPATH`` whenever a
program of the task runs: gold, validation, agent).

Only modules that are safe to ship unchanged are vendored. The closure is refused, with the reason,
when a module cannot be found (``import x`` of a name that is neither installed nor in the
repository is a program error the gold run would only report later), when it is larger than a
bound (generated code or a vendored library: the task would no longer be about the analysis).
A helper that reads or writes a *fixed* path (``./outlier_metrics/x.csv``) is vendored redirected:
the same rewrite that sends the program to ``datasets/`` and ``pred_results/`` runs over it (see
:mod:`veriforge.discovery.helperio`). Paths a helper receives as arguments come from the rewritten
program; :func:`helper_io_calls` makes the program's call of such a helper a read or write.

Where Python would look is modelled the way the program runs from its own folder: the script's
folder first, then the repository root and ``src/``, plus folders the code itself adds with
``sys.path.append``/``insert`` of a statically known path (``sys.path.append('../experiment')``,
``Path(__file__).resolve().parent.parent``).
"""

from __future__ import annotations

import ast
import hashlib
import posixpath
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veriforge.discovery.display import python2_to_3
from veriforge.discovery.iocalls import LISTING_CALLS, analyse, from_default, top_level_imports
from veriforge.discovery.pathexpr import SCRIPT_DIR, PathEvaluator

if TYPE_CHECKING:
    from veriforge.discovery.mine import RepoIndex

__all__ = [
    "LIB_DIR",
    "LocalModule",
    "extra_sys_paths",
    "helper_api",
    "helper_io_calls",
    "helper_summary",
    "local_closure",
]

LIB_DIR = "lib"
"""Folder of a task (and of every run's working directory) that holds the vendored modules."""

MAX_BYTES = 1_000_000
MAX_FILES = 64


@dataclass(frozen=True)
class LocalModule:
    """One vendored file: its repository path and where it goes under ``lib/``."""

    name: str  # top-level import name ("analysis_aux", "rules")
    path: str  # repository-relative source file
    dest: str  # path under lib/ ("analysis_aux.py", "rules/__init__.py")
    sha256: str  # of the repository file
    size: int
    python2: bool = False  # converted by the 2to3 fixers when vendored (see display.python2_to_3)
    fixed_io: int = 0  # reads/writes of fixed paths: the vendored copy is redirected (discovery.helperio)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _sys_path_calls(tree: ast.Module) -> list[ast.expr]:
    """Arguments of ``sys.path.append(X)`` / ``sys.path.insert(i, X)`` anywhere in the module."""
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if not (isinstance(owner, ast.Attribute) and owner.attr == "path"):
            continue
        if not (isinstance(owner.value, ast.Name) and owner.value.id == "sys"):
            continue
        if node.func.attr == "append" and node.args:
            out.append(node.args[0])
        elif node.func.attr == "insert" and len(node.args) > 1:
            out.append(node.args[1])
    return out


def extra_sys_paths(tree: ast.Module, index: RepoIndex, rel: str) -> list[str]:
    """Repository folders the module at ``rel`` adds to ``sys.path`` (statically known ones only).

    A relative path is taken from the module's folder (research scripts are run from where they
    live), an absolute one is matched into the repository like any other path.
    """
    here = posixpath.dirname(rel)
    ev = PathEvaluator(tree, str(index.root / rel))
    found: list[str] = []
    for arg in _sys_path_calls(tree):
        pv = ev.evaluate(arg)
        if pv is None:
            continue
        value = pv.value.replace(SCRIPT_DIR, str(index.root / here) if here else str(index.root))
        if value.startswith("/"):
            root = str(index.root)
            norm = posixpath.normpath(value)
            if norm == root:
                found.append("")
            elif norm.startswith(root + "/"):
                found.append(norm[len(root) + 1 :])
            continue
        joined = posixpath.normpath(posixpath.join(here, value)) if here else posixpath.normpath(value)
        if joined == ".":
            joined = ""
        if not joined.startswith("..") and (joined == "" or joined in index.dirs):
            found.append(joined)
    return found


def _find(index: RepoIndex, name: str, bases: list[str]) -> tuple[str, str] | None:
    """``(base, "module"|"package")`` where ``import name`` would be found, first base first."""
    for base in bases:
        stem = posixpath.join(base, name) if base else name
        if f"{stem}.py" in index.files:
            return base, "module"
        if f"{stem}/__init__.py" in index.files:
            return base, "package"
    return None


def _package_files(index: RepoIndex, pkg_dir: str) -> list[str]:
    prefix = pkg_dir + "/"
    return sorted(
        f
        for f in index.files
        if f.startswith(prefix)
        and f.endswith(".py")
        and not any(p in ("tests", "test") for p in f[len(prefix) :].split("/")[:-1])
    )


def _fixed_io(source: str, tree: ast.Module, rel: str, index: RepoIndex) -> int:
    """How many reads/writes of a *fixed* path the helper at ``rel`` does outside its own
    ``__main__`` demo (they are redirected when the task is built, see discovery.helperio)."""
    from veriforge.discovery.helperio import demo_lines

    an = analyse(source, file_path=str(index.root / rel), tree=tree)
    demo = demo_lines(tree)
    return sum(1 for ref in an.refs if ref.value and ref.line not in demo and not from_default(ref, an))


def local_closure(
    index: RepoIndex,
    script_rel: str,
    tree: ast.Module,
    imports: list[str],
    *,
    max_bytes: int = MAX_BYTES,
    max_files: int = MAX_FILES,
) -> tuple[list[LocalModule], list[str]] | str:
    """The local modules the program at ``script_rel`` needs, and their third-party imports.

    Returns ``(modules, third_party_imports)`` -- empty when the program imports nothing local --
    or a one-line reason why the closure cannot be vendored.
    """
    script_dir = posixpath.dirname(script_rel)
    bases = [script_dir, "", "src", *extra_sys_paths(tree, index, script_rel)]
    modules: dict[str, LocalModule] = {}
    third_party: set[str] = set()
    seen: set[str] = set()
    pending = [(name, script_rel) for name in imports]
    local_names: set[str] = set()
    total = 0
    while pending:
        name, importer = pending.pop(0)
        if name in seen:
            continue
        seen.add(name)
        hit = _find(index, name, bases)
        if hit is None:
            if importer != script_rel:
                third_party.add(name)  # a helper's import of an installed package
            continue
        base, kind = hit
        local_names.add(name)
        stem = posixpath.join(base, name) if base else name
        files = [f"{stem}.py"] if kind == "module" else _package_files(index, stem)
        for rel in files:
            raw = (index.root / rel).read_bytes()
            total += len(raw)
            if total > max_bytes or len(modules) >= max_files:
                return (
                    f"repository-local modules too large to vendor (> {max_bytes // 1000} kB or "
                    f"> {max_files} files, reached at {rel})"
                )
            py2 = False
            try:
                source = raw.decode("utf-8-sig")
                mod_tree = ast.parse(source)
            except SyntaxError as exc:
                converted = python2_to_3(source)
                if converted is None:
                    return f"repository-local module {rel} cannot be parsed ({exc.__class__.__name__})"
                source, mod_tree, py2 = converted, ast.parse(converted), True
            except UnicodeDecodeError as exc:
                return f"repository-local module {rel} cannot be parsed ({exc.__class__.__name__})"
            dest = rel[len(base) + 1 :] if base else rel
            modules[rel] = LocalModule(
                name, rel, dest, hashlib.sha256(raw).hexdigest(), len(raw), py2, _fixed_io(source, mod_tree, rel, index)
            )
            mod_imports, _relative = top_level_imports(mod_tree)
            bases.extend(b for b in extra_sys_paths(mod_tree, index, rel) if b not in bases)
            pending.extend((m, rel) for m in mod_imports if m not in seen)
    third_party -= local_names
    return list(modules.values()), sorted(third_party)


def helper_api(source: str, limit: int = 12) -> list[str]:
    """Public functions and classes of a helper module, as ``name(args)`` lines for an instruction
    (what a solver needs to call it without reading it)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            args = [a.arg for a in node.args.posonlyargs + node.args.args]
            doc = (ast.get_docstring(node) or "").strip().splitlines()
            out.append(f"{node.name}({', '.join(args)})" + (f": {doc[0]}" if doc else ""))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            doc = (ast.get_docstring(node) or "").strip().splitlines()
            out.append(f"class {node.name}" + (f": {doc[0]}" if doc else ""))
        if len(out) >= limit:
            out.append("...")
            break
    return out


def helper_summary(task_dir: Path, modules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per vendored top-level module: its import name and public API (from the copy in ``lib/``)."""
    by_name: dict[str, list[str]] = {}
    for mod in modules:
        api = by_name.setdefault(mod["name"], [])
        if mod["dest"].endswith(("/__init__.py",)) or mod["dest"] == f"{mod['name']}.py":
            path = Path(task_dir) / LIB_DIR / mod["dest"]
            if path.is_file():
                api.extend(helper_api(path.read_text(encoding="utf-8-sig", errors="replace")))
    return [{"module": name, "api": api} for name, api in by_name.items()]


def _module_dotted(dest: str) -> str:
    dotted = dest[: -len(".py")].replace("/", ".")
    return dotted[: -len(".__init__")] if dotted.endswith(".__init__") else dotted


def _param_of(ev: Any, node: ast.AST | None, fn: ast.AST) -> tuple[str, bool] | None:
    """``(parameter, whole)`` when the path expression ``node`` inside ``fn`` is one of ``fn``'s
    parameters (``whole``) or starts with one (``path + 'S' + n``, ``os.path.join(path, f)``,
    ``f"{path}/x.csv"``, or a local variable assigned one of those): the caller names the file,
    or the folder the helper reads in."""
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]  # type: ignore[attr-defined]
    whole = True
    for _ in range(12):
        if isinstance(node, ast.Name):
            if node.id in params:
                return node.id, whole
            node = ev.single_assignment(node)  # a local spelling of the path
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Div):
            node, whole = node.left, False
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.FormattedValue):
            node, whole = node.values[0].value, False
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant)
            and str(node.func.value.value).startswith(("{}", "{0}"))
            and node.args
        ):
            node, whole = node.args[0], False  # "{}/data.pickle".format(path)
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and str(node.left.value).startswith("%s")
        ):
            first = node.right.elts[0] if isinstance(node.right, ast.Tuple) and node.right.elts else node.right
            node, whole = first, False  # "%s/data.csv" % path
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name == "join":
                whole = whole and len(node.args) == 1
            elif name not in ("Path", "PurePath", "str", "abspath", "realpath", "normpath", "fspath"):
                return None
            node = node.args[0]
        else:
            return None
    return None


def _path_params(source: str, tree: ast.Module) -> dict[str, list[list[Any]]]:
    """Top-level functions of a helper whose parameters name paths they read or write, one spec
    ``[position, parameter, role]`` per such parameter: ``{"load_trial": [[0, "path", "read"]]}``
    for ``def load_trial(path): return pd.read_csv(path)``. A fourth element ``"folder"`` says the
    helper reads or writes *inside* the folder it is given (``glob.glob(path + 'S*.dat')``,
    ``df.to_csv(os.path.join(out_dir, f"{base}_clean.csv"))``).

    A helper that hands its parameter on to another helper of the same module inherits that
    helper's use (``def preprocess(path): return load_all(path)``), to a fixed point, so a
    program's call of the outermost function is still seen as the read it is.
    """
    an = analyse(source, tree=tree)
    # callables by the name the program calls: functions, and classes through their __init__
    # (whose first parameter, self, the caller does not pass)
    tops: dict[str, ast.FunctionDef] = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    offset: dict[str, int] = {}
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef):
            for member in cls.body:
                if isinstance(member, ast.FunctionDef) and member.name == "__init__":
                    tops[cls.name], offset[cls.name] = member, 1
    name_of = {id(fn): name for name, fn in tops.items()}
    out: dict[str, dict[str, list[Any]]] = {}  # callable -> parameter -> spec

    def note(fn: ast.FunctionDef, param: str, role: str, folder: bool) -> bool:
        name = name_of[id(fn)]
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        index = params.index(param) - offset.get(name, 0)
        if index < 0:
            return False  # self
        spec: list[Any] = [index, param, role] + (["folder"] if folder else [])
        mine = out.setdefault(name, {})
        prev = mine.get(param)
        if prev is None or (prev[2] != "read" and role == "read"):
            mine[param] = spec  # a parameter used both ways is an input: reading it is what matters
            return prev != spec
        return False

    def uses(fn: ast.FunctionDef) -> list[tuple[ast.AST | None, str, bool]]:
        """(path expression, role, listing) of this function's reads and writes of unknown paths."""
        found = [
            (r.node, r.role, r.listing)
            for r in an.refs
            if (r.value is None or from_default(r, an))
            and r.role != "mkdir"
            and r.node is not None
            and an.evaluator.function_of(r.node) is fn
        ]
        for node in ast.walk(fn):  # glob.glob(path + 'S*.csv'): a listing of a path known only at run time
            if isinstance(node, ast.Call) and node.args and _listing_name(node.func):
                if an.evaluator.evaluate(node.args[0]) is None:
                    found.append((node.args[0], "read", True))
        return found

    for fn in tops.values():
        for node, role, listing in uses(fn):
            hit = _param_of(an.evaluator, node, fn)
            if hit is not None:
                note(fn, hit[0], role, listing or not hit[1])
    changed = True
    while changed:  # parameters handed on to another helper of this module
        changed = False
        for fn in tops.values():
            for node in ast.walk(fn):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                    continue
                if node.func.id == name_of[id(fn)]:
                    continue
                for spec in list(out.get(node.func.id, {}).values()):
                    arg = node.args[spec[0]] if len(node.args) > spec[0] else None
                    for kw in node.keywords:
                        if kw.arg == spec[1]:
                            arg = kw.value
                    hit = _param_of(an.evaluator, arg, fn) if arg is not None else None
                    if hit is not None:
                        changed |= note(fn, hit[0], spec[2], len(spec) > 3 or not hit[1])
    return {name: sorted(specs.values()) for name, specs in out.items() if specs}


def _listing_name(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}" in LISTING_CALLS
    return isinstance(func, ast.Name) and func.id in LISTING_CALLS


def helper_io_calls(index: RepoIndex, modules: list[dict[str, Any]], tree: ast.Module) -> dict[str, list[Any]]:
    """Calls in the program (``tree``) to vendored helper functions that read or write the path
    they are given, keyed by how the program spells them (``load_trial``, ``aux.load_trial``).

    Without this, ``df = load_trial("data/x.csv")`` would be a program that "reads no dataset",
    and its path would never be redirected to ``datasets/``.
    """
    from veriforge.discovery.helperio import parsed_helper

    by_module: dict[str, dict[str, list[Any]]] = {}
    reexports: list[tuple[str, str, str, str]] = []  # (module, local name, source module, name)
    for mod in modules:
        if not mod["dest"].endswith(".py"):
            continue
        dotted = _module_dotted(mod["dest"])
        try:
            source, mod_tree = parsed_helper(index.root, mod)
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue
        by_module[dotted] = _path_params(source, mod_tree)
        package = dotted if mod["dest"].endswith("__init__.py") else dotted.rpartition(".")[0]
        for stmt in mod_tree.body:  # a package's `from .processing import clean_csv`
            if isinstance(stmt, ast.ImportFrom) and stmt.module:
                base = package.split(".") if package else []
                up = base[: len(base) - stmt.level + 1] if stmt.level else []
                target = ".".join([*up, stmt.module]) if stmt.level else stmt.module
                reexports += [(dotted, a.asname or a.name, target, a.name) for a in stmt.names]
    for dotted, local, target, name in reexports:
        spec = by_module.get(target, {}).get(name)
        if spec is not None:
            by_module[dotted].setdefault(local, spec)
    calls: dict[str, list[Any]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                local = alias.asname or alias.name
                fns = by_module.get(node.module, {})
                if alias.name in fns:
                    calls[local] = fns[alias.name]
                for fn, spec in by_module.get(f"{node.module}.{alias.name}", {}).items():
                    calls[f"{local}.{fn}"] = spec  # from pkg import utils; utils.load(...)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                prefix = alias.asname or alias.name
                for fn, spec in by_module.get(alias.name, {}).items():
                    calls[f"{prefix}.{fn}"] = spec
    return calls
