"""Fixed paths inside vendored helper modules: which of them run, so they can be redirected.

A helper that writes ``./outlier_metrics/summary.csv`` or reads ``../data/names.dat`` itself used
to cost the whole program (the survey lost Context2024's main analysis this way): the rewrite that
sends a program to ``datasets/`` and ``pred_results/`` only touched the program. The same rewrite
now runs over such helpers too (see :func:`veriforge.discovery.standalone.make_standalone`); this
module says which of a helper's fixed-path calls can run when the program runs.

*Reached* is decided by name, conservatively: code at a helper's top level runs on import; a
function or class is reached when the program, or reached helper code, mentions its name (a call,
an attribute ``aux.f``, or a reference such as ``df.apply(f)``); a reached class reaches all its
methods. A reached write is one of the task's outputs, and a reached read must be a file of the
repository (it becomes part of ``datasets/``). Unreached calls are redirected as well, so nothing a
helper does escapes the task folder, but they name no output: the gold run would never produce it.
Code under a helper's own ``if __name__ == "__main__":`` never runs on import and is left alone.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veriforge.discovery.iocalls import Analysis, IORef, analyse, from_default, is_main_guard

__all__ = [
    "HelperIO",
    "demo_lines",
    "helper_fixed_io",
    "helpers_draw",
    "parsed_helper",
    "reached_functions",
    "vendored_source",
]


@dataclass
class HelperIO:
    """One vendored helper with fixed-path I/O, analysed as it is vendored."""

    module: dict[str, Any]  # the LocalModule dict (path, dest, ...)
    source: str
    analysis: Analysis
    reached: list[IORef] = field(default_factory=list)  # fixed-path calls that can run
    unreached: list[IORef] = field(default_factory=list)  # fixed-path calls in code nothing calls
    demo: set[int] = field(default_factory=set)  # lines of its __main__ block (never run on import)


def vendored_source(root: Path, module: dict[str, Any]) -> str:
    """The text a helper is vendored with (Python 2 helpers converted, as ``copy_local_modules`` does)."""
    source = (root / module["path"]).read_text(encoding="utf-8-sig")
    if module.get("python2"):
        from veriforge.discovery.display import python2_to_3

        source = python2_to_3(source) or source
    return source


def parsed_helper(root: Path, module: dict[str, Any]) -> tuple[str, ast.Module]:
    """``(vendored source, its AST)`` of a helper, parsed once per file version: the miner asks
    for the same helpers for every program that imports them (I/O parameters, fixed paths,
    drawing), and the standalone stage asks again. Raises OSError/UnicodeDecodeError/SyntaxError."""
    path = Path(root) / module["path"]
    st = path.stat()
    return _parsed(str(root), module["path"], bool(module.get("python2")), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=512)
def _parsed(root: str, rel: str, python2: bool, _mtime_ns: int, _size: int) -> tuple[str, ast.Module]:
    source = vendored_source(Path(root), {"path": rel, "python2": python2})
    return source, ast.parse(source)


def demo_lines(tree: ast.Module) -> set[int]:
    """Lines of top-level ``if __name__ == "__main__":`` blocks (never run on import)."""
    lines: set[int] = set()
    for stmt in tree.body:
        if is_main_guard(stmt):
            lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _mentions(nodes: list[ast.AST]) -> set[str]:
    """Names and attribute names used in ``nodes`` (what code there could call)."""
    out: set[str] = set()
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Name):
                out.add(node.id)
            elif isinstance(node, ast.Attribute):
                out.add(node.attr)
    return out


def _import_time_code(tree: ast.Module) -> list[ast.AST]:
    """Statements a module runs when imported: everything but function bodies and ``__main__``."""
    out: list[ast.AST] = []
    for stmt in tree.body:
        if is_main_guard(stmt):
            continue
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            out.extend([*stmt.decorator_list, *stmt.args.defaults])  # evaluated at definition time
            continue
        if isinstance(stmt, ast.ClassDef):
            out.extend(s for s in stmt.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef))
            out.extend(stmt.bases + stmt.decorator_list)
            continue
        out.append(stmt)
    return out


def reached_functions(program: ast.Module, helpers: list[ast.Module]) -> set[int]:
    """``id()`` of every helper function or method that can run when ``program`` runs (by name)."""
    defs: dict[str, list[ast.AST]] = {}
    for tree in helpers:
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defs.setdefault(stmt.name, []).append(stmt)
    pending = list(_mentions([program]))
    for tree in helpers:
        pending.extend(_mentions(_import_time_code(tree)))
    reached: set[int] = set()
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in defs.get(name, []):
            bodies: list[ast.AST] = []
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                        reached.add(id(member))
                        bodies.append(member)
            else:
                reached.add(id(node))
                bodies.append(node)
            pending.extend(_mentions(bodies) - seen)
    return reached


def _is_reached(ref: IORef, an: Analysis, reached: set[int]) -> bool:
    """Whether the function ``ref`` sits in (its outermost one, for nested functions) is reached;
    a call at module level always is."""
    fn = an.evaluator.function_of(ref.node) if ref.node is not None else None
    outer = None
    while fn is not None:
        outer, fn = fn, an.evaluator.function_of(fn)
    return outer is None or id(outer) in reached


def helper_fixed_io(root: Path, modules: list[dict[str, Any]], program: ast.Module) -> list[HelperIO]:
    """The vendored helpers (of ``modules``) that read or write fixed paths, with those calls
    split into reached and unreached ones. ``root`` is the repository."""
    parsed: list[tuple[dict[str, Any], str, ast.Module]] = []
    for mod in modules:
        try:
            parsed.append((mod, *parsed_helper(root, mod)))
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue  # the closure refused such modules already; nothing to redirect here
    reached = reached_functions(program, [tree for _m, _s, tree in parsed])
    out: list[HelperIO] = []
    for mod, source, tree in parsed:
        if not mod.get("fixed_io"):
            continue
        an = analyse(source, file_path=str(root / mod["path"]), tree=tree)
        demo = demo_lines(tree)
        item = HelperIO(mod, source, an, demo=demo)
        for ref in an.refs:
            if ref.value is None or ref.line in demo or from_default(ref, an):
                continue
            (item.reached if _is_reached(ref, an, reached) else item.unreached).append(ref)
        out.append(item)
    return out


def helpers_draw(root: Path, modules: list[dict[str, Any]], program: ast.Module) -> bool:
    """Whether helper code the program reaches draws a figure (``edd.plot_all(...)`` in a helper,
    ``plt.show()`` in the program): then the program's displayed figures are its outputs too."""
    from veriforge.discovery.display import draws

    trees = []
    for mod in modules:
        try:
            trees.append(parsed_helper(root, mod)[1])
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue
    reached = reached_functions(program, trees)
    for tree in trees:
        nodes = [n for n in ast.walk(tree) if id(n) in reached] + _import_time_code(tree)
        if any(draws(n) for n in nodes):
            return True
    return False
