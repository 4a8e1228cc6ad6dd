"""A user's own kernel as an OptiML-X task: the original kernel is the reference.

``veriforge optimize my_kernel.cu --kernel K --grid EXPR --block EXPR --param n=4096 [--size x=n*m]``
needs no task folder. :func:`build_user_task` writes one (content-addressed, under
``cache_dir("optiml-user-tasks")``):

* ``[[params]]`` from ``K``'s signature: a ``const`` pointer is an input, any other pointer is
  in/out (the kernel may read it before writing, and may leave parts untouched: the comparison is on
  the whole buffer after the launch); scalars take their value from ``--param NAME=VALUE``; pointer
  sizes (element counts) from ``--size NAME=EXPR`` (an expression of the scalars). A size is inferred
  only in the one unambiguous case: a single integer scalar and every subscript of the pointer a
  plain name (``x[i]``), which is then that scalar; otherwise :class:`OptimizeInputError` says which
  ``--size`` to give (the total thread count of the launch is not a safe guess).
* Inputs by type: floating point ``uniform(-1, 1)``, integers ``randint(0, 16)`` (so an ``int``
  array used as indices stays inside any buffer of at least 16 elements; ``--init NAME=GENERATOR``
  overrides, e.g. ``--init idx="randint(0, n)"``).
* ``solve()``: a generated ``extern "C"`` wrapper that launches ``K`` with ``dim3 grid(--grid)`` and
  ``dim3 block(--block)`` (C expressions of the scalars; ``a, b`` for 2-D). It is appended to the
  kernel file and is part of the candidate, so the launch is tunable too.
* The reference is the ORIGINAL kernel (``reference.cu``: the kernel file plus the same wrapper), run
  through the CPU runtime (or the GPU back-end: ``reference.backend``) by
  :mod:`veriforge.cuda.tasks.reference`; or ``--reference mod.py:fn``, a NumPy function
  (``reference_numpy.py``).
* Configurations: the given sizes (``given``) plus derived ones that break alignment (``half``:
  every integer scalar of at least 4 halved and made odd; ``small``: every integer scalar capped at
  19, below most block sizes, with a tail). The original decides the domain: a derived size where the
  original fails or crashes is dropped (listed in :attr:`UserTask.dropped`). Held-out sizes
  (:mod:`.heldout`) for the final check are derived from these on top.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veriforge.core.types import Candidate
from veriforge.errors import ConfigError

if TYPE_CHECKING:
    from veriforge.cuda.tasks.schema import TaskSpec

__all__ = ["GENERATED_MARK", "UserKernelError", "UserTask", "build_user_task", "kernel_output", "parse_assignments"]

USER_TASK_VERSION = "1"
GENERATED_MARK = "// ---- veriforge optimize: generated launch of the kernel (not part of your file) ----"
FLOAT_INIT = "uniform(-1, 1)"
INT_INIT = "randint(0, 16)"
SMALL_CAP = 19


class UserKernelError(ConfigError):
    """The user's kernel and launch options do not define a task (one line, exit 2 at the CLI)."""


@dataclass
class UserTask:
    spec: TaskSpec
    start: Candidate
    label: str
    kernel: str
    signature: list[tuple[str, str]]
    entry: str
    grid: list[str]
    block: list[str]
    dropped: dict[str, str] = field(default_factory=dict)


def parse_assignments(items: list[str] | None, what: str) -> dict[str, str]:
    """``["n=4096", "x=n*m"]`` → ``{"n": "4096", "x": "n*m"}``."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not re.match(r"^[A-Za-z_]\w*$", name) or not value:
            raise UserKernelError(f"{what} {item!r}: expected NAME=VALUE")
        out[name] = value
    return out


def _number(text: str, name: str) -> int | float:
    try:
        return int(text, 0)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise UserKernelError(f"--param {name}={text}: not a number") from None


def _components(expr: str, what: str) -> list[str]:
    text = expr.strip()
    m = re.match(r"^dim3\s*\((.*)\)$", text, re.S)
    if m:
        text = m.group(1)
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        cur += ch
    parts.append(cur.strip())
    if not 1 <= len(parts) <= 3 or not all(parts):
        raise UserKernelError(f"{what} {expr!r}: give 1 to 3 comma-separated expressions (x, y, z)")
    return parts


def _has_launch(source: str, kernel: str) -> bool:
    return re.search(rf"\b{re.escape(kernel)}\s*<<<", source) is not None


def _odd_half(v: int) -> int:
    return max(3, v // 2) | 1


def _derived(values: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    ints = {k: v for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 4}
    out = []
    if ints:
        out.append(("half", {**values, **{k: _odd_half(v) for k, v in ints.items()}}))
        out.append(("small", {**values, **{k: min(v, SMALL_CAP) for k, v in ints.items()}}))
    seen = [values]
    kept = []
    for name, vals in out:
        if vals not in seen:
            seen.append(vals)
            kept.append((name, vals))
    return kept


def _infer_size(source: str, name: str, scalars: list[tuple[str, str]]) -> str | None:
    ints = [n for n, t in scalars if re.search(r"\b(int|long|unsigned|size_t)\b", t)]
    if len(ints) != 1:
        return None
    subs = re.findall(rf"\b{re.escape(name)}\s*\[([^\]]*)\]", source)
    if subs and all(re.fullmatch(r"\s*[A-Za-z_]\w*\s*", s) for s in subs):
        return ints[0]
    return None


def _toml_value(v: Any) -> str:
    return json.dumps(v)


def _wrapper(entry: str, kernel: str, sig: list[tuple[str, str]], grid: list[str], block: list[str]) -> str:
    """The generated entry: a 1-D launch inline (``K<<<g, b>>>``, the form every operator reads), a
    multi-dimensional one through ``dim3 block(...)`` / ``dim3 grid(...)``."""
    params = ", ".join(f"{t} {n}" for n, t in sig)
    args = ", ".join(n for n, _ in sig)
    if len(grid) == 1 and len(block) == 1:
        body = f"    {kernel}<<<{grid[0]}, {block[0]}>>>({args});\n"
    else:
        body = (f"    dim3 block({', '.join(block)});\n"
                f"    dim3 grid({', '.join(grid)});\n"
                f"    {kernel}<<<grid, block>>>({args});\n")
    return f"{GENERATED_MARK}\nextern \"C\" void {entry}({params}) {{\n{body}}}\n"


def build_user_task(kernel_file: str | Path, kernel: str | None, grid: str | None, block: str | None,
                    params: dict[str, str], sizes: dict[str, str], *, inits: dict[str, str] | None = None,
                    reference: str | None = None, backend: str = "cpu", root: Path | None = None) -> UserTask:
    """The task of ``kernel`` in ``kernel_file`` launched with ``grid``/``block`` (see the module doc)."""
    from veriforge.cuda.tasks.ctypes_map import CSignatureError, find_signature, is_pointer, numpy_dtype

    path = Path(kernel_file)
    if not path.is_file():
        raise UserKernelError(f"kernel file {path} does not exist")
    source = path.read_text()
    if GENERATED_MARK in source:
        source = source.split(GENERATED_MARK)[0].rstrip() + "\n"
    if kernel is None:
        raise UserKernelError("give --kernel NAME (the __global__ function to optimise) with --grid, --block and "
                              "--param, or --task for a task folder")
    if _has_launch(source, kernel):
        raise UserKernelError(f"{path.name} launches {kernel} itself (host code): inferring the launch from a host "
                              f"program is not supported yet; give the kernel alone with --grid, --block, --param "
                              f"(and --size for pointers)")
    if grid is None or block is None:
        raise UserKernelError(f"--kernel {kernel}: give --grid EXPR and --block EXPR (the launch, as expressions of "
                              f"the scalar parameters, e.g. --grid '(n + 255) / 256' --block 256)")
    try:
        sig = [(p.name, p.ctype) for p in find_signature(source, kernel)]
    except CSignatureError as exc:
        raise UserKernelError(f"{path.name}: kernel {kernel}: {exc}") from None
    if not re.search(rf"__global__[^;{{}}]*\b{re.escape(kernel)}\s*\(", source):
        raise UserKernelError(f"{path.name}: {kernel} is not a __global__ function")
    gparts, bparts = _components(grid, "--grid"), _components(block, "--block")
    inits = dict(inits or {})
    names = [n for n, _ in sig]
    for what, table in (("--param", params), ("--size", sizes), ("--init", inits)):
        for key in table:
            if key not in names and what != "--size":
                raise UserKernelError(f"{what} {key}: {kernel} has no parameter {key!r} (has: {', '.join(names)})")
    scalars = [(n, t) for n, t in sig if not is_pointer(t)]
    values: dict[str, Any] = {}
    for n, t in scalars:
        if n not in params:
            raise UserKernelError(f"give --param {n}=VALUE (scalar parameter {n} of {kernel})")
        v = _number(params[n], n)
        if numpy_dtype(t).startswith(("int", "uint")) and not isinstance(v, int):
            raise UserKernelError(f"--param {n}={params[n]}: {n} is an integer parameter")
        values[n] = v
    entry = "vf_solve" if re.search(r"\bsolve\s*\(", source) else "solve"
    lines: list[str] = []
    roles: dict[str, str] = {}
    for n, t in sig:
        ctype = " ".join(t.replace("__restrict__", "").replace("__restrict", "").split()).replace(" *", "*")
        try:
            dtype = numpy_dtype(ctype)
        except CSignatureError as exc:
            raise UserKernelError(f"{kernel}: parameter {n}: {exc}") from None
        lines.append("[[params]]")
        lines.append(f"name = {_toml_value(n)}")
        lines.append(f"type = {_toml_value(ctype)}")
        if not is_pointer(ctype):
            roles[n] = "scalar"
            lines += ['role = "scalar"', ""]
            continue
        role = "in" if ctype.split("*")[0].split().count("const") else "inout"
        roles[n] = role
        size = sizes.get(n) or _infer_size(source, n, scalars)
        if size is None:
            raise UserKernelError(f"give --size {n}=EXPR (element count of pointer {n} as an expression of "
                                  f"{', '.join(x for x, _ in scalars) or 'the scalars'}; it cannot be inferred)")
        init = inits.get(n) or (FLOAT_INIT if dtype.startswith(("float", "bfloat")) else INT_INIT)
        lines += [f"role = {_toml_value(role)}", f"size = {_toml_value(size)}", f"init = {_toml_value(init)}", ""]
    for key in sizes:
        if key not in roles or roles[key] == "scalar":
            raise UserKernelError(f"--size {key}: {kernel} has no pointer parameter {key!r}")
    if not any(r == "inout" for r in roles.values()):
        raise UserKernelError(f"{kernel} has no non-const pointer parameter: it has no output to verify")
    wrapper = _wrapper(entry, kernel, sig, gparts, bparts)
    start_source = source.rstrip() + "\n\n" + wrapper
    ref_text = None
    ref_fn = None
    if reference:
        mod, _, fn = reference.rpartition(":")
        if not mod or not re.match(r"^[A-Za-z_]\w*$", fn):
            raise UserKernelError(f"--reference {reference!r}: expected FILE.py:FUNCTION")
        mpath = Path(mod)
        if not mpath.is_file():
            raise UserKernelError(f"--reference: {mpath} does not exist")
        ref_text, ref_fn = mpath.read_text(), fn
    configs = [("given", values), *_derived(values)]
    digest = hashlib.sha256("\0".join([USER_TASK_VERSION, start_source, "\n".join(lines), repr(configs),
                                       ref_text or "", ref_fn or "", backend]).encode()).hexdigest()
    tid = "user_" + re.sub(r"[^a-z0-9_]", "_", kernel.lower())[:40] + "_" + digest[:10]
    if root is None:
        from veriforge.core.paths import cache_dir

        root = cache_dir("optiml-user-tasks")
    folder = root / tid
    header = [f"id = {_toml_value(tid)}", 'family = "c2cuda"', 'category = "other"',
              f"title = {_toml_value(f'{kernel} from {path.name} (the original kernel is the reference)')}",
              f"description = {_toml_value(f'Built by veriforge optimize from {path.name}: launch grid({grid}) block({block}).')}",  # noqa: E501
              f"entry = {_toml_value(entry)}", ""]
    tol = ["[tolerance]", "rtol = 1e-4", "atol = 1e-4", ""]

    def cfg_lines(cfgs: list[tuple[str, dict[str, Any]]]) -> list[str]:
        out = []
        for i, (name, vals) in enumerate(cfgs):
            out += ["[[configs]]", f"name = {_toml_value(name)}", f"seed = {101 + i}"]
            out += [f"{k} = {_toml_value(v)}" for k, v in vals.items()]
            out.append("")
        return out

    def write(target: Path, cfgs: list[tuple[str, dict[str, Any]]]) -> None:
        target.mkdir(parents=True, exist_ok=True)
        (target / "task.toml").write_text("\n".join(header + lines + tol + cfg_lines(cfgs)))
        if ref_text is not None:
            (target / "reference_numpy.py").write_text(f"{ref_text.rstrip()}\n\n__veriforge_reference__ = {ref_fn}\n")
        else:
            (target / "reference.cu").write_text(start_source)
            if backend != "cpu":
                (target / "reference.backend").write_text(backend)
        (target / "original.cu").write_text(start_source)

    dropped: dict[str, str] = {}
    if not (folder / "task.toml").is_file():
        tmp = root / f".{tid}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        probe = tmp / tid
        write(probe, configs)
        kept = _check_configs(probe, configs, dropped)
        if "given" not in {n for n, _ in kept}:
            shutil.rmtree(tmp, ignore_errors=True)
            raise UserKernelError(f"the reference fails at the given sizes: {dropped.get('given')}")
        if len(kept) != len(configs):
            write(probe, kept)
        (probe / "dropped.json").write_text(json.dumps(dropped))
        try:
            os.replace(probe, folder)
        except OSError:  # a concurrent build won
            pass
        shutil.rmtree(tmp, ignore_errors=True)
    from veriforge.cuda.tasks import load_task

    spec = load_task(folder)
    try:
        dropped = json.loads((folder / "dropped.json").read_text())
    except (OSError, ValueError):
        dropped = {}
    start = Candidate(source=start_source, metadata={"path": str(path), "user_kernel": kernel})
    return UserTask(spec, start, path.name, kernel, sig, entry, gparts, bparts, dropped)


def _check_configs(folder: Path, configs: list[tuple[str, dict[str, Any]]],
                   dropped: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """The configurations where the reference runs (the original defines the domain)."""
    from veriforge.cuda.tasks import load_task
    from veriforge.cuda.tasks.generate import make_case
    from veriforge.cuda.tasks.reference import run_c_reference

    spec = load_task(folder)
    kept = []
    for name, vals in configs:
        try:
            for trial in (0, 1):
                run_c_reference(spec, make_case(spec, name, trial))
        except Exception as exc:  # the original (or the NumPy reference) fails here: outside its domain
            first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            dropped[name] = f"the reference fails here: {first}"
            continue
        kept.append((name, vals))
    return kept


def kernel_output(task: UserTask, best_source: str) -> tuple[str, bool, str]:
    """The best kernel as a drop-in file: the user's kernel code (the generated wrapper removed, its
    launch kept as a comment), whether the launch changed, and the launch statements (one line)."""
    body, _, wrapper = best_source.partition(GENERATED_MARK)
    start_wrapper = task.start.source.partition(GENERATED_MARK)[2]
    changed = " ".join(wrapper.split()) != " ".join(start_wrapper.split())
    inner = wrapper.strip().splitlines()[1:-1]  # between `extern "C" ... {` and `}`
    launch = " ".join(ln.strip() for ln in inner if ln.strip())
    note = ("LAUNCH CHANGED by the search: launch the kernel as in this solve()" if changed
            else "launch unchanged; the solve() it was verified with")
    comment = "\n".join(f"//   {ln}" for ln in wrapper.strip().splitlines())
    text = f"{body.rstrip()}\n\n// veriforge optimize: {note}\n{comment}\n"
    return text, changed, launch
