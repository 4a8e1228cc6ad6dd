"""Find a program's dataset reads, output writes, imports and entry point by AST analysis.

The tables below name the calls research code uses to read inputs and write results (pandas, NumPy,
SciPy, matplotlib, PIL/imageio/OpenCV, h5py, xarray, torch, joblib, builtin ``open``). A call only
counts when its path argument evaluates statically (see :mod:`veriforge.discovery.pathexpr`); the
others are kept as *unresolved* so the miner can say why a program was not built.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from veriforge.discovery.pathexpr import PathEvaluator, PathValue

__all__ = ["Analysis", "IORef", "analyse", "entry_kind", "is_main_guard", "top_level_imports"]

Role = Literal["read", "write", "mkdir"]

READ_CALLS = frozenset(
    {
        "read_csv",
        "read_table",
        "read_fwf",
        "read_excel",
        "read_json",
        "read_parquet",
        "read_feather",
        "read_pickle",
        "read_hdf",
        "read_stata",
        "read_sas",
        "read_spss",
        "read_orc",
        "read_xml",
        "read_file",
        "loadtxt",
        "genfromtxt",
        "fromfile",
        "load",
        "loadmat",
        "imread",
        "open_dataset",
        "open_mfdataset",
        "open_dataarray",
        "read_image",
        "load_workbook",
        "read_sql",
        "read_nifti",
        "ExcelFile",
    }
)
# receivers whose .parse(path) reads an XML file (xml.etree.ElementTree as ET / xet, lxml.etree, minidom)
XML_PARSERS = frozenset({"et", "xet", "etree", "elementtree", "minidom", "eltree"})
WRITE_CALLS = frozenset(
    {
        "to_csv",
        "to_excel",
        "to_json",
        "to_parquet",
        "to_feather",
        "to_pickle",
        "to_hdf",
        "to_latex",
        "to_html",
        "to_markdown",
        "to_netcdf",
        "to_stata",
        "save",
        "savez",
        "savez_compressed",
        "savetxt",
        "savefig",
        "imsave",
        "imwrite",
        "savemat",
        "dump",
        "ExcelWriter",
        "write_image",
        "write_html",  # plotly figures (write_image above): recorded from the figure object
        "write_json",
        "to_file",
        "tofile",
    }
)
RECEIVER_READS = frozenset({"read_text", "read_bytes"})
# Calls that read a folder's listing: ``os.listdir("models")``, ``glob.glob("data/*.csv")``,
# ``Path("data").glob("*.csv")``. The program then opens what it found, by names unknown here, so
# the whole folder is the dataset. Matched on the dotted name: ``ast.walk`` is no listing.
LISTING_CALLS = frozenset(
    {"os.listdir", "listdir", "os.scandir", "scandir", "os.walk", "glob.glob", "glob.iglob", "glob", "iglob"}
)
RECEIVER_LISTINGS = frozenset({"iterdir", "glob", "rglob"})
WILDCARDS = ("*", "?", "[")
RECEIVER_WRITES = frozenset({"write_text", "write_bytes"})
OPENERS = frozenset({"open", "File"})  # builtin/io/gzip/codecs open, PIL Image.open, h5py.File
MKDIRS = frozenset({"makedirs", "mkdir"})
PATH_KEYWORDS = (
    "path",
    "fname",
    "file",
    "filepath",
    "filepath_or_buffer",
    "path_or_buf",
    "filename",
    "f",
    "fp",
    "excel_writer",
    "io",
    "name",
    "uri",
    "path_or_buffer",
)
_TEXTUAL_EXT_HINTS = (".", "/")


@dataclass
class IORef:
    """One read, write or mkdir call whose path the program uses."""

    role: Role
    call: str
    line: int
    value: str | None
    node: ast.AST | None = field(default=None, repr=False, compare=False)
    path: PathValue | None = field(default=None, repr=False, compare=False)
    # a folder listing or glob pattern (``value`` may hold wildcards): the dataset is the folder;
    # for a write, the folder it writes files named at run time into (the gold run finds them)
    listing: bool = field(default=False, compare=False)
    # a read whose path is not known as a whole but starts with a known part
    # ('models' + os.sep + name): see :meth:`PathEvaluator.leading` and :meth:`as_folder_read`
    prefix: PathValue | None = field(default=None, repr=False, compare=False)

    def as_folder_read(self, is_folder: Callable[[str], bool]) -> IORef | None:
        """This partly known read as a read of the folder its known prefix names, or None.

        The prefix may end inside a file name (``'../data/obs_' + n``): its folder part is used
        then. ``is_folder`` says whether a path is a folder of the repository.
        """
        if self.value is not None or self.prefix is None:
            return None
        value = self.prefix.value
        for folder in (value, posixpath.dirname(value.rstrip("/")) if not value.endswith("/") else value):
            if folder.strip("./") and is_folder(folder):
                return IORef(self.role, self.call, self.line, folder, self.node, self.prefix, listing=True)
        return None

    @property
    def folder(self) -> str | None:
        """The folder a listing reads: ``value`` up to its first wildcard component."""
        if self.value is None:
            return None
        if not self.listing:
            return self.value
        parts = self.value.split("/")
        keep = []
        for part in parts:
            if any(w in part for w in WILDCARDS):
                break
            keep.append(part)
        return "/".join(keep)

    def to_dict(self) -> dict[str, object]:
        return {"role": self.role, "call": self.call, "line": self.line, "value": self.value}


@dataclass
class Analysis:
    """What one module does with files."""

    tree: ast.Module
    evaluator: PathEvaluator
    refs: list[IORef]
    imports: list[str]
    relative_imports: bool
    entry: str | None

    @property
    def reads(self) -> list[IORef]:
        return [r for r in self.refs if r.role == "read"]

    @property
    def writes(self) -> list[IORef]:
        return [r for r in self.refs if r.role == "write"]

    @property
    def mkdirs(self) -> list[IORef]:
        return [r for r in self.refs if r.role == "mkdir"]


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        inner = _call_name(func.value)
        return f"{inner}.{func.attr}" if inner else func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _mode_of(call: ast.Call, position: int) -> str:
    mode: ast.expr | None = call.args[position] if len(call.args) > position else None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return mode.value
    return "r"


def _looks_like_path(value: str) -> bool:
    return (
        bool(value)
        and "\n" not in value
        and len(value) < 4096
        and any(h in value for h in _TEXTUAL_EXT_HINTS)
    )


def _path_arg(
    ev: PathEvaluator, call: ast.Call, positions: tuple[int, ...], strict: bool = True
) -> tuple[ast.AST | None, PathValue | None]:
    """The first argument that evaluates to a path (``strict``: must contain "." or "/", to tell a
    path from another string argument)."""
    candidates: list[ast.AST] = [call.args[i] for i in positions if i < len(call.args)]
    candidates += [kw.value for kw in call.keywords if kw.arg in PATH_KEYWORDS]
    for node in candidates:
        pv = ev.evaluate(node)
        if pv is not None and (
            _looks_like_path(pv.value) or (not strict and pv.value and "\n" not in pv.value)
        ):
            return node, pv
    return (candidates[0] if candidates else None), None


def _helper_refs(ev: PathEvaluator, call: ast.Call, name: str, specs: list[Any]) -> list[IORef]:
    """The reads/writes a call of a repository helper function does through its arguments.

    ``specs``: ``[[position, keyword, role(, "folder")], ...]`` (one flat spec is accepted too,
    as candidates mined before several per function were recorded).
    """
    out: list[IORef] = []
    for position, keyword, role, *how in specs if specs and isinstance(specs[0], list) else [specs]:
        node: ast.AST | None = call.args[position] if len(call.args) > position else None
        for kw in call.keywords:
            if kw.arg == keyword:
                node = kw.value
        if node is None:
            continue
        pv = ev.evaluate(node)
        if how == ["folder"]:  # the helper reads or writes inside the folder it is given
            if pv is None or pv.value.strip("./") == "":
                continue
            value = pv.value.rstrip("/") if role == "write" else pv.value
            out.append(IORef(role, name, call.lineno, value, node, pv, listing=True))
        else:
            out.append(IORef(role, name, call.lineno, pv.value if pv else None, node, pv))
    return out


def _classify(ev: PathEvaluator, call: ast.Call) -> IORef | None:
    func = call.func
    name = _call_name(func)
    attr = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    line = call.lineno
    if name in LISTING_CALLS and (isinstance(func, ast.Name) or name.startswith(("os.", "glob."))):
        node, pv = _path_arg(ev, call, (0,), strict=False)
        if pv is None or pv.value.strip("./") == "":
            return None  # a listing of the working folder itself is no dataset
        return IORef("read", name, line, pv.value, node, pv, listing=True)
    if attr in RECEIVER_LISTINGS and isinstance(func, ast.Attribute):
        pv = ev.evaluate(func.value)  # Path("data").glob("*.csv"): the receiver is the folder
        if pv is None or pv.value.strip("./") == "":
            return None
        pattern = ev.evaluate(call.args[0]) if call.args else None
        value = pv.value if attr == "iterdir" or pattern is None else posixpath.join(pv.value, pattern.value)
        return IORef("read", name, line, value, func.value, pv, listing=True)
    if attr in RECEIVER_READS | RECEIVER_WRITES and isinstance(func, ast.Attribute):
        pv = ev.evaluate(func.value)
        role: Role = "read" if attr in RECEIVER_READS else "write"
        return IORef(role, name, line, pv.value if pv else None, func.value, pv)
    if attr in MKDIRS:
        if isinstance(func, ast.Attribute) and attr == "mkdir" and not call.args:
            pv = ev.evaluate(func.value)  # Path("out").mkdir(parents=True)
            return IORef("mkdir", name, line, pv.value if pv else None, func.value, pv)
        node, pv = _path_arg(ev, call, (0,), strict=False)
        return IORef("mkdir", name, line, pv.value if pv else None, node, pv)
    if attr in OPENERS:
        mode_pos = 1
        node, pv = _path_arg(ev, call, (0,))
        mode = _mode_of(call, mode_pos)
        role = "write" if any(c in mode for c in "wax") else "read"
        if node is None and pv is None:
            return None
        return IORef(role, name, line, pv.value if pv else None, node, pv)
    receiver = _call_name(func.value).split(".")[-1].lower() if isinstance(func, ast.Attribute) else ""
    if attr == "parse" and receiver in XML_PARSERS:
        node, pv = _path_arg(ev, call, (0,))  # ET.parse("config.xml"); dateutil's parse(...) is no read
        return IORef("read", name, line, pv.value if pv else None, node, pv)
    if attr in READ_CALLS:
        node, pv = _path_arg(ev, call, (0,))
        if attr == "load" and pv is None:
            return None  # json.load(fh), pickle.load(fh): the path is on the open() call
        return IORef("read", name, line, pv.value if pv else None, node, pv)
    if attr in WRITE_CALLS:
        if attr in ("dump",):
            node, pv = _path_arg(
                ev, call, (1,)
            )  # joblib.dump(obj, "model.pkl"); json.dump(obj, fh) has no path
            if pv is None:
                return None
            return IORef("write", name, line, pv.value, node, pv)
        node, pv = _path_arg(ev, call, (0, 1))
        if pv is None and attr == "save" and not call.args and not call.keywords:
            return None
        return IORef("write", name, line, pv.value if pv else None, node, pv)
    return None


def from_default(ref: IORef, an: Analysis) -> bool:
    """Whether ``ref``'s path is known only through a parameter's default value: in a helper the
    caller usually passes its own (``Experiment(path_to_data="./")`` called as ``Experiment(d)``),
    so the default is no fixed path of the helper's."""
    fn = an.evaluator.function_of(ref.node) if ref.node is not None else None
    if ref.path is None or not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    defaulted = {a.arg for a in positional[len(positional) - len(args.defaults) :]}
    defaulted |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None}
    nodes = [ref.node, *(node for node, _v in ref.path.chain)]
    return any(isinstance(sub, ast.Name) and sub.id in defaulted for n in nodes for sub in ast.walk(n))


def top_level_imports(tree: ast.Module) -> tuple[list[str], bool]:
    """Top-level module names imported anywhere in the module, and whether relative imports occur."""
    names: set[str] = set()
    relative = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative = True
            elif node.module:
                names.add(node.module.split(".")[0])
    return sorted(names), relative


def is_main_guard(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    parts = [stmt.test.left, *stmt.test.comparators]
    names = {p.id for p in parts if isinstance(p, ast.Name)}
    consts = {p.value for p in parts if isinstance(p, ast.Constant)}
    return "__name__" in names and "__main__" in consts


_CONFIG_CALLS = frozenset(
    {
        "Path",
        "join",
        "dirname",
        "abspath",
        "realpath",
        "expanduser",
        "getenv",
        "getcwd",
        "cwd",
        "joinpath",
        "get",
        "ArgumentParser",
        "getLogger",
        "use",
        "filterwarnings",
        "seed",
        "set_option",
        "set_style",
        "set_theme",
        "TypeVar",
        "namedtuple",
        "compile",
        "resolve",
        "str",
        "int",
        "float",
        "list",
        "dict",
        "set",
        "tuple",
        "frozenset",
        "field",
        "dataclass",
    }
)


def _is_code(stmt: ast.stmt) -> bool:
    """True for a top-level statement that does work (not an import, definition or constant)."""
    if isinstance(
        stmt,
        ast.Import
        | ast.ImportFrom
        | ast.FunctionDef
        | ast.AsyncFunctionDef
        | ast.ClassDef
        | ast.Pass
        | ast.Global,
    ):
        return False
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return False  # docstring
    if isinstance(stmt, ast.Assign | ast.AnnAssign):
        value = stmt.value
        if value is None:
            return False
        for node in ast.walk(value):
            if isinstance(node, ast.Call):
                func = node.func
                name = (
                    func.attr
                    if isinstance(func, ast.Attribute)
                    else func.id
                    if isinstance(func, ast.Name)
                    else ""
                )
                if name not in _CONFIG_CALLS:
                    return True
        return False
    if isinstance(stmt, ast.Try):
        return any(_is_code(s) for s in stmt.body)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        name = _call_name(stmt.value.func).split(".")[-1]
        return name not in ("use", "filterwarnings", "seed", "set_option", "set_style", "set_theme")
    return True


def entry_kind(tree: ast.Module) -> str | None:
    """``"main_guard"``, ``"top_level"`` (script body does work) or None (definitions only)."""
    if any(is_main_guard(s) for s in tree.body):
        return "main_guard"
    if any(_is_code(s) for s in tree.body):
        return "top_level"
    return None


def analyse(
    source: str,
    file_path: str | None = None,
    tree: ast.Module | None = None,
    extra_calls: dict[str, list[Any]] | None = None,
) -> Analysis:
    """Analyse ``source`` (raises SyntaxError when it does not parse).

    ``extra_calls``: call names (as written in this module, ``load_trial`` or ``aux.load_trial``)
    of repository helper functions that read or write the path given as one of their arguments,
    ``name -> [[position, keyword, role(, "folder")], ...]`` (see :func:`_helper_refs` and
    :func:`veriforge.discovery.localmods.helper_io_calls`).
    """
    tree = tree or ast.parse(source)
    ev = PathEvaluator(tree, file_path=file_path)
    refs: list[IORef] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _call_name(node.func)
            if extra_calls and name in extra_calls:
                refs.extend(_helper_refs(ev, node, name, extra_calls[name]))
                continue
            ref = _classify(ev, node)
            if ref is not None:
                if ref.value is None and ref.role == "read" and ref.node is not None:
                    ref.prefix = ev.leading(ref.node)
                elif ref.value is None and ref.role == "write" and ref.node is not None:
                    # df.to_csv(os.path.join(OUT, name + ".csv")): a file named at run time in a
                    # known folder -- the folder is the output, its files are found by the gold run
                    folder = ev.leading_folder(ref.node)
                    if folder is not None and folder.value.strip("./"):
                        ref = IORef("write", ref.call, ref.line, folder.value.rstrip("/"), ref.node, folder,
                                    listing=True)
                refs.append(ref)
    refs.sort(key=lambda r: (r.line, r.role))
    imports, relative = top_level_imports(tree)
    return Analysis(tree, ev, refs, imports, relative, entry_kind(tree))
