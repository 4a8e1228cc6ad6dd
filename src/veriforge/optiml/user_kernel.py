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
  :mod:`veriforge.cuda.tasks.reference`; or ``--reference mod.py:fn``, a NumPy function, or a
  PyTorch one when the module imports torch (``reference_numpy.py``).
* Configurations: the given sizes (``given``) plus derived ones that break alignment (``half``:
  every integer scalar of at least 4 halved and made odd; ``small``: every integer scalar capped at
  19, below most block sizes, with a tail). The original decides the domain: a derived size where the
  original fails or crashes is dropped (listed in :attr:`UserTask.dropped`). Held-out sizes
  (:mod:`.heldout`) for the final check are derived from these on top.
* A host program (``--host main.cu``, or host functions in the kernel file that launch ``K``):
  :func:`infer_launch` reads grid, block, pointer sizes (``cudaMalloc``) and scalar values from the
  first launch; what it cannot infer is named in one line with the option to give. Host functions of
  the kernel file are kept out of the candidate and written back unchanged after the optimised kernel.
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

from veriforge.core.sourcefile import read_source
from veriforge.core.types import Candidate
from veriforge.errors import ConfigError
from veriforge.optiml.source_scan import unparen

if TYPE_CHECKING:
    from veriforge.cuda.tasks.schema import TaskSpec

__all__ = ["GENERATED_MARK", "LaunchInference", "UserKernelError", "UserTask", "build_user_task", "infer_launch",
           "kernel_output", "parse_assignments"]

USER_TASK_VERSION = "1"
GENERATED_MARK = "// ---- veriforge optimize: generated launch of the kernel (not part of your file) ----"
FLOAT_INIT = "uniform(-1, 1)"
INT_INIT = "randint(0, 16)"
SMALL_CAP = 19
EMULATION_BUDGET_S = 2.0
"""Wall seconds one run of the original may take on the CPU runtime at a verified size. Candidates
run at the same sizes, and a restructured kernel (barriers run on fibers) can be 10-100x slower to
emulate than the loop the original becomes: above this the given sizes are only timed (estimated)
and correctness is checked at shrunk sizes."""
SHRINK_FLOOR = 32  # integer scalars are halved down to this, never below


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
    #: host functions of the kernel file that launched the kernel (kept out of the candidate, written
    #: back unchanged after the optimised kernel)
    host_code: str = ""
    #: when the given sizes are too slow to emulate: ``{"given_seconds": s or None (past the probe's
    #: limit), "budget_s": b, "shrunk": values}``; the given sizes are then a ``[[timing]]`` config
    emulation: dict[str, Any] | None = None


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


_MALLOC = re.compile(r"\bcudaMalloc(?:Managed)?\s*\(\s*(?:\(\s*\w+\s*\*\s*\*\s*\)\s*)?"
                     r"&\s*([A-Za-z_]\w*)\s*,([^;]*)\)\s*;")
_DEFINE_EXPR = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]+)$", re.M)
_SIZEOF = re.compile(r"\s*\*\s*sizeof\s*\([^()]*\)|sizeof\s*\([^()]*\)\s*\*\s*")
_C_WORDS = {"int", "unsigned", "long", "size_t", "float", "double", "const", "sizeof", "min", "max", "dim3"}


@dataclass
class LaunchInference:
    """What a host launch ``K<<<g, b>>>(args)`` says about the task; ``missing`` maps an option
    (``--grid``, ``--block``, ``--size X``, ``--param n``) to why it could not be inferred."""

    grid: str | None = None
    block: str | None = None
    sizes: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    host_spans: list[tuple[int, int]] = field(default_factory=list)


def infer_launch(host_text: str, kernel: str, sig: list[tuple[str, str]], where: str) -> LaunchInference:
    """Grid, block, pointer sizes and scalar values of the first launch of ``kernel`` in ``host_text``:
    the launch's own expressions with host locals, ``#define``s and ``dim3`` variables substituted
    and the launch's argument names replaced by the kernel's parameter names; pointer sizes from the
    ``cudaMalloc(&p, COUNT * sizeof(T))`` of the argument; scalar values from literal-valued locals."""
    from veriforge.cuda.tasks.ctypes_map import is_pointer
    from veriforge.optiml.source_scan import DIM3_DECL, EXPR_DECL, eval_int, scan, split_top

    sc = scan(host_text)
    launches = sc.launches_of(kernel)
    if not launches:
        raise UserKernelError(f"{where}: no launch {kernel}<<<...>>>(...) found; give --grid, --block, --param "
                              f"(and --size for pointers)")
    launch = launches[0]
    call = sc.launch_call(launch)
    args = [sc.expr(a) for a in call[0]] if call else []
    if call is None or len(args) != len(sig):
        raise UserKernelError(f"{where}: cannot read the arguments of {kernel}<<<...>>>(...) (expected {len(sig)}); "
                              f"give --grid, --block, --param (and --size for pointers)")
    fn = sc.host_function(launch, containing=True)
    out = LaunchInference()
    if fn is not None:
        out.host_spans.append((fn.header_start, fn.body_end + 1))
    before = sc.text[fn.body_start:launch.start] if fn is not None else ""
    defs: dict[str, str] = {m.group(1): m.group(2).strip() for m in _DEFINE_EXPR.finditer(sc.text)}
    events = [(m.start(), m.group(1), m.group(2)) for m in EXPR_DECL.finditer(before)]
    events += [(m.start(), m.group(1), f"dim3({m.group(2) or m.group(3) or m.group(4) or ''})")
               for m in DIM3_DECL.finditer(before)]
    for _, name, expr in sorted(events):
        defs[name] = expr.strip()
    rename = {a: p for a, (p, _) in zip(args, sig, strict=True) if re.fullmatch(r"[A-Za-z_]\w*", a)}
    scalars = {p for p, t in sig if not is_pointer(t)}

    def subst(expr: str, unknown: set[str], depth: int = 0, renaming: bool = True) -> str:
        def one(m: re.Match[str]) -> str:
            name = m.group(0)
            if renaming and name in rename and rename[name] in scalars:
                return rename[name]
            if name in _C_WORDS:
                return name
            if name in defs and depth < 8 and (name not in rename or not renaming):
                inner = subst(defs[name], unknown, depth + 1, renaming).strip()
                return inner if re.fullmatch(r"\w+", inner) else f"({inner})"
            unknown.add(name)
            return name
        return re.sub(r"(?<![\w.])[A-Za-z_]\w*\b", one, expr)

    for option, span in (("--grid", launch.grid), ("--block", launch.block)):
        text = sc.expr(span)
        if re.fullmatch(r"[A-Za-z_]\w*", text) and defs.get(text, "").startswith("dim3("):
            text = defs[text]
        m = re.fullmatch(r"dim3\s*\((.*)\)", text, re.S)
        parts = [text[a:b].strip() for a, b in split_top(text, m.start(1), m.end(1))] if m else [text]
        unknown: set[str] = set()
        done = [unparen(subst(p, unknown)) for p in parts]
        if unknown:
            out.missing[option] = f"`{sc.expr(span)}` uses {', '.join(sorted(unknown))}, not a kernel argument"
        else:
            setattr(out, option[2:], ", ".join(done))
    env = sc.host_env(fn.name) if fn is not None else {}
    mallocs = {m.group(1): m.group(2).strip() for m in _MALLOC.finditer(before)}
    for arg, (name, _ctype) in zip(args, sig, strict=True):
        if name in scalars:
            lit = re.fullmatch(r"\s*([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)[fF]?\s*", arg)
            value = eval_int(subst(arg, set(), renaming=False), env) if lit is None else lit.group(1)
            if isinstance(value, int | str) and not isinstance(value, bool):
                out.params[name] = str(value)
            else:
                out.missing[f"--param {name}"] = f"argument `{arg}` has no literal value in {where}"
            continue
        if arg not in mallocs:
            out.missing[f"--size {name}"] = f"no cudaMalloc(&{arg}, ...) before the launch in {where}"
            continue
        unknown = set()
        count = _SIZEOF.sub("", subst(mallocs[arg], unknown)).strip()
        count = unparen(count)
        if unknown or "sizeof" in count:
            why = f"uses {', '.join(sorted(unknown))}" if unknown else "not COUNT * sizeof(T)"
            out.missing[f"--size {name}"] = f"cudaMalloc(&{arg}, {mallocs[arg]}) {why}"
        else:
            out.sizes[name] = count
    return out


def build_user_task(kernel_file: str | Path, kernel: str | None, grid: str | None, block: str | None,
                    params: dict[str, str], sizes: dict[str, str], *, inits: dict[str, str] | None = None,
                    reference: str | None = None, backend: str = "cpu", root: Path | None = None,
                    host: str | Path | None = None, emulation_budget_s: float = EMULATION_BUDGET_S) -> UserTask:
    """The task of ``kernel`` in ``kernel_file`` launched with ``grid``/``block`` (see the module doc)."""
    from veriforge.cuda.tasks.ctypes_map import CSignatureError, find_signature, is_pointer, numpy_dtype

    path = Path(kernel_file)
    if not path.is_file():
        raise UserKernelError(f"kernel file {path} does not exist")
    source = read_source(path)
    if GENERATED_MARK in source:
        source = source.split(GENERATED_MARK)[0].rstrip() + "\n"
    if kernel is None:
        from veriforge.optiml.source_scan import scan

        kernels = [f.name for f in scan(source).kernels()]
        if len(kernels) != 1:
            raise UserKernelError(f"{path.name} defines {len(kernels)} kernels ({', '.join(kernels) or 'none'}): give "
                                  f"--kernel NAME (the __global__ function to optimise)")
        kernel = kernels[0]
    try:
        sig = [(p.name, p.ctype) for p in find_signature(source, kernel)]
    except CSignatureError as exc:
        raise UserKernelError(f"{path.name}: kernel {kernel}: {exc}") from None
    if not re.search(rf"__global__[^;{{}}]*\b{re.escape(kernel)}\s*\(", source):
        raise UserKernelError(f"{path.name}: {kernel} is not a __global__ function")
    host_code = ""
    if host is not None or _has_launch(source, kernel):
        hpath = Path(host) if host is not None else path
        if not hpath.is_file():
            raise UserKernelError(f"--host {hpath} does not exist")
        inferred = infer_launch(read_source(hpath) if host is not None else source, kernel, sig, hpath.name)
        grid = grid or inferred.grid
        block = block or inferred.block
        sizes = {**inferred.sizes, **sizes}
        params = {**inferred.params, **params}
        for option, why in inferred.missing.items():
            given = {"--grid": grid, "--block": block}.get(option) if option in ("--grid", "--block") else \
                (sizes if option.startswith("--size") else params).get(option.split()[1])
            if given is None:
                what = option + ("=EXPR" if option.startswith("--size") else "=VALUE" if " " in option else " EXPR")
                raise UserKernelError(f"cannot infer {option} from the launch of {kernel} in {hpath.name} ({why}): "
                                      f"give {what}")
        if host is None:  # the host code lives in the kernel file: the candidate is the kernel code alone
            spans = sorted(inferred.host_spans)
            host_code = "\n\n".join(source[a:b] for a, b in spans)
            for a, b in reversed(spans):
                source = source[:a] + source[b:]
    if grid is None or block is None:
        raise UserKernelError(f"--kernel {kernel}: give --grid EXPR and --block EXPR (the launch, as expressions of "
                              f"the scalar parameters, e.g. --grid '(n + 255) / 256' --block 256)")
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
        ref_text, ref_fn = read_source(mpath), fn
    configs = [("given", values), *_derived(values)]
    digest = hashlib.sha256("\0".join([USER_TASK_VERSION, start_source, "\n".join(lines), repr(configs),
                                       ref_text or "", ref_fn or "", backend,
                                       f"{emulation_budget_s:g}"]).encode()).hexdigest()
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
    metrics: list[str] = []  # set when the given sizes are timed only (see _original_bytes)

    def cfg_lines(cfgs: list[tuple[str, dict[str, Any]]], table: str = "configs", seed: int = 101) -> list[str]:
        out = []
        for i, (name, vals) in enumerate(cfgs):
            out += [f"[[{table}]]", f"name = {_toml_value(name)}", f"seed = {seed + i}"]
            out += [f"{k} = {_toml_value(v)}" for k, v in vals.items()]
            out.append("")
        return out

    timing: list[tuple[str, dict[str, Any]]] = []

    def write(target: Path, cfgs: list[tuple[str, dict[str, Any]]]) -> None:
        target.mkdir(parents=True, exist_ok=True)
        (target / "task.toml").write_text("\n".join(header + lines + tol + metrics + cfg_lines(cfgs)
                                                     + cfg_lines(timing, "timing", 201)))
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
        emulation = None
        if backend == "cpu":
            try:
                emulation = _fit_emulation(probe, start_source, values, emulation_budget_s)
            except UserKernelError:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            if emulation is not None:
                configs = [("shrunk", emulation["shrunk"]), *_derived(emulation["shrunk"])]
                timing = [("given", values)]
                write(probe, configs)
                metrics = ["# the original's counted global traffic at the given sizes: a candidate's estimate there",
                           "# is trusted only if it moves at least half of it (estimate.check_timing)",
                           "[metrics]", f"bytes = {_original_bytes(probe, start_source):.0f}", ""]
                write(probe, configs)
        base = "shrunk" if timing else "given"
        kept = _check_configs(probe, configs, dropped)
        for name, why in dropped.items():  # the reference is the user's file (same lines): say its name
            dropped[name] = why.replace("reference.cu:", f"{path.name}:")
        if base not in {n for n, _ in kept}:
            shutil.rmtree(tmp, ignore_errors=True)
            raise UserKernelError(f"the reference fails at the {base} sizes: {dropped.get(base)}")
        if len(kept) != len(configs):
            write(probe, kept)
        (probe / "dropped.json").write_text(json.dumps(dropped))
        (probe / "emulation.json").write_text(json.dumps(emulation))
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
    try:
        emulation = json.loads((folder / "emulation.json").read_text())
    except (OSError, ValueError):
        emulation = None
    start = Candidate(source=start_source, metadata={"path": str(path), "user_kernel": kernel})
    return UserTask(spec, start, path.name, kernel, sig, entry, gparts, bparts, dropped, host_code, emulation)


def _shrink(values: dict[str, Any], halvings: int) -> dict[str, Any]:
    """Every integer scalar of at least 2 * SHRINK_FLOOR halved ``halvings`` times (not below the floor)."""
    out = dict(values)
    for k, v in values.items():
        if isinstance(v, int) and not isinstance(v, bool) and v >= 2 * SHRINK_FLOOR:
            out[k] = max(SHRINK_FLOOR, v >> halvings)
    return out


def _original_bytes(folder: Path, source: str) -> float:
    """Global bytes the original moves at the ``given`` (timing) sizes, by the cost model.

    Why: timing sizes are estimated, never run. Without a floor on the traffic a candidate could be
    right at the verified (shrunk) sizes and skip the work at the given ones (``if (n > 4096)
    return;``) and be estimated as fast; ``metrics.bytes`` is that floor for ``check_timing``."""
    from veriforge.cuda.evaluate.estimate import estimate_launches
    from veriforge.cuda.tasks import load_task
    from veriforge.cuda.tasks.generate import make_case

    spec = load_task(folder)
    case = make_case(spec, "given", 0)
    scalars = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "scalar"}
    inputs = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "in"}
    est = estimate_launches(source, spec.entry, scalars, inputs=inputs)
    return sum(float(ln.get("useful_bytes") or 0.0) for ln in est.launches)


def _fit_emulation(folder: Path, source: str, values: dict[str, Any], budget_s: float) -> dict[str, Any] | None:
    """None when one run of the original at the given sizes takes at most ``budget_s`` on the CPU runtime;
    else the shrunk sizes it fits at (integer scalars halved until it does), with what was measured.

    Why: every candidate is emulated at the verified sizes, and restructured kernels are much slower to
    emulate than the original; a given size the emulator cannot finish would be reported as every
    candidate timing out. The given sizes stay the ones the speed is judged at (``[[timing]]``,
    estimated by the cost model), so shrinking changes what is verified, not what is optimised for."""
    import time

    from veriforge.cuda.tasks import load_task
    from veriforge.cuda.tasks.generate import make_case
    from veriforge.cuda.tasks.reference import ReferenceError, run_cuda_program

    limit = max(4.0 * budget_s, 10.0)

    def seconds(name: str, vals: dict[str, Any]) -> float | None:
        """Wall time of one run (the second: the first compiles), None past ``limit``."""
        spec = load_task(folder)
        for trial in (0, 1):
            case = make_case(spec, name, trial)
            t0 = time.perf_counter()
            try:
                run_cuda_program(spec, source, case, timeout_s=limit)
            except ReferenceError as exc:
                if exc.status == "timeout":
                    return None
                return 0.0  # fails for another reason: _check_configs reports it
            took = time.perf_counter() - t0
            if took <= budget_s and trial == 0:
                return took  # compile included and still within the budget
        return took

    given = seconds("given", values)
    if given is not None and given <= budget_s:
        return None
    text = (folder / "task.toml").read_text()
    for halvings in range(1, 13):
        vals = _shrink(values, halvings)
        if vals == _shrink(values, halvings - 1):
            break
        body = "\n".join(["[[configs]]", 'name = "probe"', "seed = 7",
                          *(f"{k} = {_toml_value(v)}" for k, v in vals.items()), ""])
        (folder / "task.toml").write_text(text.rstrip() + "\n\n" + body)
        took = seconds("probe", vals)
        if took is not None and took <= budget_s:
            (folder / "task.toml").write_text(text)
            return {"given_seconds": given, "budget_s": budget_s, "shrunk": vals, "shrunk_seconds": took}
    (folder / "task.toml").write_text(text)
    at = f"more than {limit:g} s" if given is None else f"{given:.1f} s"
    raise UserKernelError(f"one run of the original takes {at} on the CPU runtime at the given sizes (budget "
                          f"{budget_s:g} s) and halving its integer sizes down to {SHRINK_FLOOR} does not bring it "
                          f"under the budget: give smaller --param values, a larger --emulation-budget, or use a GPU")


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
    if task.host_code:
        extra = " — UPDATE its launch as above" if changed else ""
        text += f"\n// your host code, unchanged{extra}\n{task.host_code.rstrip()}\n"
    return text, changed, launch
