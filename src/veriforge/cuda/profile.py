"""Nsight Compute profiles, read into the same feature names the static analysis uses.

Rewards and optimisers take kernel features (coalescing, bank conflicts, occupancy, divergence,
...) from whichever source exists: the static analysis on any machine, or Nsight Compute on a GPU.
This module is the GPU side. :func:`ncu_command` builds an ``ncu --csv --page raw`` command line,
:func:`run_ncu` runs it, and :func:`parse_ncu_csv` turns the CSV into one :class:`KernelProfile`
per kernel launch, with

* ``metrics``: every raw metric as a float in ncu's *base* unit (ncu scales units for display,
  e.g. ``usecond``, ``Kbyte`` (10^3 bytes), ``Gbyte/second``; those are converted back: time to
  nanoseconds, sizes to bytes, rates to per-second), ``"n/a"`` and empty cells left out;
* ``features``: the shared vocabulary of :mod:`veriforge.cuda.features`, computed from each
  feature's ncu expression by a small arithmetic evaluator (``+ - * /``, parentheses, numbers,
  metric names; never Python ``eval``). A feature whose metrics are missing, ``n/a``, or whose
  expression divides by zero (no shared-memory requests at all, say) is *absent* and ``notes``
  says why; it is never written as 0.

Every number here has provenance ``measured``.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veriforge.cuda.features import FEATURES
from veriforge.errors import CudaError, ToolchainNotFoundError

if TYPE_CHECKING:
    from veriforge.core.types import Measurement

__all__ = [
    "ExpressionError",
    "KernelProfile",
    "NcuParseError",
    "ProfileError",
    "evaluate_expression",
    "expression_metrics",
    "feature_metrics",
    "find_ncu",
    "ncu_command",
    "parse_ncu_csv",
    "parse_unit",
    "parse_value",
    "run_ncu",
]


class ProfileError(CudaError):
    """Nsight Compute could not profile the program (permissions, crash, no kernel matched)."""


class NcuParseError(ProfileError, ValueError):
    """The text is not ``ncu --csv`` output (no header row, or a malformed table)."""


class ExpressionError(CudaError, ValueError):
    """A feature's ncu expression is not valid arithmetic over metric names."""


# ---------------------------------------------------------------------------------------------
# Units and values.

_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0, "psecond": 1e-12}
_HZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
_BYTE_RE = re.compile(r"^([KMGTP]?)(byte)$")


def _unit_token(token: str) -> tuple[float, str]:
    """Factor to the base unit and the base unit's name, for one unit word (no ``/``)."""
    if token in _TIME:
        return _TIME[token], "second"
    if token.lower() in _HZ:
        return _HZ[token.lower()], "hz"
    m = _BYTE_RE.match(token)
    if m:
        return _SI[m.group(1)], "byte"
    return 1.0, token


def parse_unit(unit: str) -> tuple[float, str]:
    """``(factor, base_unit)`` such that ``value * factor`` is in ``base_unit``.

    ncu's base units: a lone time is ``nsecond`` (``gpu__time_duration`` is in ns), sizes are
    ``byte``, rates are per ``second``, frequencies ``hz``. ncu's size prefixes are decimal
    (``Kbyte`` = 1000 bytes). Units ncu never scales (``sector``, ``inst``, ``%``, ``cycle``,
    ``register/thread``) come back unchanged with factor 1.
    """
    unit = (unit or "").strip()
    if not unit or unit == "%":
        return 1.0, unit
    num, sep, den = unit.partition("/")
    f_num, b_num = _unit_token(num)
    if not sep:
        if b_num == "second":  # a duration: ncu's base is nanoseconds
            return f_num / 1e-9, "nsecond"
        return f_num, b_num
    f_den, b_den = _unit_token(den)
    return f_num / f_den, f"{b_num}/{b_den}"


_NUMBER_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_value(text: str) -> float | None:
    """A number from an ncu cell: thousands separators removed; None for ``n/a`` or empty.

    Raises ``ValueError`` for anything else, so a format change is loud rather than a silent 0.
    """
    s = (text or "").strip().strip('"')
    if not s or s.lower() in ("n/a", "na", "-", "nan"):
        return None
    s = s.replace(",", "").replace("\u202f", "").replace(" ", "")
    if not _NUMBER_RE.match(s):
        raise ValueError(f"not a number: {text!r}")
    return float(s)


_DIMS_RE = re.compile(r"-?\d+")


def _parse_dims(text: str) -> tuple[int, int, int] | None:
    nums = [int(v) for v in _DIMS_RE.findall(text or "")]
    if not nums or len(nums) > 3:
        return None
    nums += [1] * (3 - len(nums))
    return nums[0], nums[1], nums[2]


# ---------------------------------------------------------------------------------------------
# A tiny arithmetic evaluator for feature expressions.

_TOKEN_RE = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)"
    r"|(?P<op>[-+*/()]))"
)


class _Missing(Exception):
    def __init__(self, names: list[str]) -> None:
        super().__init__(", ".join(names))
        self.names = names


@lru_cache(maxsize=256)
def _compile(expr: str) -> tuple[Any, frozenset[str]]:
    """Parse ``expr`` into a nested tuple tree ("num", v) | ("var", name) | (op, a, b) | ("neg", a)."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    expr_s = expr.rstrip()
    while pos < len(expr_s):
        m = _TOKEN_RE.match(expr_s, pos)
        if not m or m.end() == pos:
            raise ExpressionError(f"unexpected character at {pos} in {expr!r}")
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    names: set[str] = set()
    i = 0

    def peek() -> tuple[str, str] | None:
        return tokens[i] if i < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal i
        if i >= len(tokens):
            raise ExpressionError(f"unexpected end of {expr!r}")
        i += 1
        return tokens[i - 1]

    def expression() -> Any:
        node = term()
        while (t := peek()) and t[1] in "+-" and t[0] == "op":
            take()
            node = (t[1], node, term())
        return node

    def term() -> Any:
        node = factor()
        while (t := peek()) and t[1] in "*/" and t[0] == "op":
            take()
            node = (t[1], node, factor())
        return node

    def factor() -> Any:
        kind, text = take()
        if kind == "num":
            return ("num", float(text))
        if kind == "name":
            names.add(text)
            return ("var", text)
        if text == "-":
            return ("neg", factor())
        if text == "+":
            return factor()
        if text == "(":
            node = expression()
            if take()[1] != ")":
                raise ExpressionError(f"missing ')' in {expr!r}")
            return node
        raise ExpressionError(f"unexpected {text!r} in {expr!r}")

    tree = expression()
    if i != len(tokens):
        raise ExpressionError(f"unexpected {tokens[i][1]!r} in {expr!r}")
    return tree, frozenset(names)


def _eval(node: Any, values: Mapping[str, float | None]) -> float:
    op = node[0]
    if op == "num":
        return node[1]
    if op == "var":
        return values[node[1]]  # type: ignore[return-value]  # presence checked by the caller
    if op == "neg":
        return -_eval(node[1], values)
    a, b = _eval(node[1], values), _eval(node[2], values)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        raise ZeroDivisionError
    return a / b


def expression_metrics(expr: str) -> list[str]:
    """The metric names an expression reads, sorted."""
    return sorted(_compile(expr)[1])


def evaluate_expression(expr: str, metrics: Mapping[str, float | None]) -> float:
    """Value of ``expr`` with metric names bound to ``metrics``.

    Raises ``KeyError`` naming the missing metrics (absent or None), ``ZeroDivisionError`` when
    a divisor is 0, :class:`ExpressionError` for bad syntax.
    """
    tree, names = _compile(expr)
    missing = sorted(n for n in names if metrics.get(n) is None)
    if missing:
        raise KeyError(", ".join(missing))
    return _eval(tree, metrics)


def feature_metrics(features: Iterable[str] | None = None) -> list[str]:
    """Every raw metric ncu must collect for ``features`` (default: all shared features)."""
    names: set[str] = set()
    for name in features if features is not None else FEATURES:
        feat = FEATURES.get(name)
        if feat is None:
            raise KeyError(f"unknown feature {name!r}")
        if feat.ncu:
            names.update(_compile(feat.ncu)[1])
    return sorted(names)


# ---------------------------------------------------------------------------------------------
# Profiles.


@dataclass
class KernelProfile:
    """One profiled kernel launch. ``metrics`` are in ncu base units (``units`` names them)."""

    kernel: str
    launch_id: int
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    metrics: dict[str, float]
    units: dict[str, str]
    features: dict[str, float]
    notes: list[str] = field(default_factory=list)
    info: dict[str, str] = field(default_factory=dict)  # Process ID, Device, CC, Stream, ...
    provenance: str = "measured"

    @property
    def name(self) -> str:
        """The kernel's function name without return type, template arguments or parameters."""
        base = self.kernel
        depth = 0
        for idx, ch in enumerate(base):  # cut at the first '(' outside template brackets
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
            elif ch == "(" and depth == 0:
                base = base[:idx]
                break
        base = re.sub(r"<.*>$", "", base.strip())
        return base.split()[-1].split("::")[-1] if base.split() else base

    @property
    def time_s(self) -> float | None:
        return self.features.get("time_s")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["name"] = self.name
        return out

    def to_measurement(self, backend: str | None = None) -> Measurement:
        """The launch's duration as a ``measured`` :class:`~veriforge.core.types.Measurement`."""
        from veriforge.core.types import Measurement

        if self.time_s is None:
            raise ProfileError(f"profile of {self.kernel} has no gpu__time_duration.sum")
        device = self.info.get("Device", "")
        return Measurement(
            name="time_s",
            value=self.time_s,
            unit="s",
            provenance="measured",
            backend=backend or (f"ncu:device{device}" if device else "ncu"),
            samples=1,
            details={"kernel": self.kernel, "launch_id": self.launch_id, "features": dict(self.features)},
        )


def compute_features(
    metrics: Mapping[str, float | None], na: Iterable[str] = ()
) -> tuple[dict[str, float], list[str]]:
    """Shared-vocabulary features from raw metrics, and a note for every feature left out."""
    na_set = set(na)
    features: dict[str, float] = {}
    notes: list[str] = []
    for name, feat in FEATURES.items():
        if not feat.ncu:
            continue
        try:
            value = evaluate_expression(feat.ncu, metrics)
        except KeyError as exc:
            missing = str(exc.args[0]).split(", ")
            reported_na = [m for m in missing if m in na_set]
            absent = [m for m in missing if m not in na_set]
            parts = []
            if absent:
                parts.append(f"not in profile: {', '.join(absent)}")
            if reported_na:
                parts.append(f"reported n/a: {', '.join(reported_na)}")
            notes.append(f"{name} absent ({'; '.join(parts)})")
            continue
        except ZeroDivisionError:
            notes.append(f"{name} absent (undefined: its expression divides by zero, e.g. no requests)")
            continue
        if not math.isfinite(value):
            notes.append(f"{name} absent (not finite)")
            continue
        features[name] = value
    flops, dram = features.get("flops"), features.get("dram_bytes")
    if flops is not None and dram:
        features["arithmetic_intensity"] = flops / dram
    elif "arithmetic_intensity" in FEATURES:
        notes.append("arithmetic_intensity absent (needs flops and non-zero dram_bytes)")
    return features, notes


_HEADER_RE = re.compile(r'^\s*"?ID"?\s*,\s*"?Process ID"?', re.MULTILINE)
_LONG_COLUMNS = ("Metric Name", "Metric Unit", "Metric Value")


def _messages(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.startswith(("==ERROR==", "==WARNING=="))]


def parse_ncu_csv(text: str) -> list[KernelProfile]:
    """Parse ``ncu --csv --page raw`` output (or ``--page details`` long format) into profiles.

    Lines before the table (the program's own output, ``==PROF==`` progress) are skipped. In the
    raw page, the row after the header holds each column's unit; metric columns are those whose
    name contains ``__`` (ncu's metric naming), the rest are launch properties.
    """
    m = _HEADER_RE.search(text)
    if not m:
        msgs = _messages(text)
        raise NcuParseError(
            'no ncu CSV table found (expected a header row starting with "ID","Process ID")'
            + (f"; ncu said: {' | '.join(msgs)}" if msgs else "")
        )
    body = [ln for ln in text[m.start() :].splitlines() if ln.strip() and not ln.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    header = [h.strip() for h in rows[0]]
    if all(c in header for c in _LONG_COLUMNS):
        return _parse_long(header, rows[1:])
    return _parse_wide(header, rows[1:])


def _row_info(header: list[str], row: list[str], metric_cols: set[int]) -> dict[str, str]:
    return {header[i]: row[i] for i in range(min(len(header), len(row))) if i not in metric_cols}


def _make_profile(
    info: dict[str, str], metrics: dict[str, float], units: dict[str, str], na: list[str], where: str
) -> KernelProfile:
    try:
        launch_id = int(parse_value(info.get("ID", "")) or 0)
    except ValueError as exc:
        raise NcuParseError(f"{where}: bad launch ID {info.get('ID')!r}") from exc
    features, notes = compute_features(metrics, na)
    notes = [f"{name} reported n/a" for name in na] + notes
    kernel = info.pop("Kernel Name", "")
    return KernelProfile(
        kernel=kernel,
        launch_id=launch_id,
        grid=_parse_dims(info.get("Grid Size", "")),
        block=_parse_dims(info.get("Block Size", "")),
        metrics=metrics,
        units=units,
        features=features,
        notes=notes,
        info=info,
    )


def _parse_wide(header: list[str], rows: list[list[str]]) -> list[KernelProfile]:
    metric_cols = {i for i, h in enumerate(header) if "__" in h}
    unit_row: list[str] = [""] * len(header)
    data = rows
    if rows and not rows[0][0].strip():  # the units row: no ID
        unit_row = rows[0] + [""] * (len(header) - len(rows[0]))
        data = rows[1:]
    scale = {i: parse_unit(unit_row[i]) for i in metric_cols}
    profiles: list[KernelProfile] = []
    for n, row in enumerate(data, start=1):
        if len(row) != len(header):
            raise NcuParseError(f"row {n} has {len(row)} cells, the header {len(header)}")
        metrics: dict[str, float] = {}
        units: dict[str, str] = {}
        na: list[str] = []
        for i in sorted(metric_cols):
            try:
                value = parse_value(row[i])
            except ValueError as exc:
                raise NcuParseError(f"row {n}, column {header[i]}: {exc}") from exc
            if value is None:
                na.append(header[i])
                continue
            factor, base = scale[i]
            metrics[header[i]] = value * factor
            units[header[i]] = base
        profiles.append(_make_profile(_row_info(header, row, metric_cols), metrics, units, na, f"row {n}"))
    return profiles


def _parse_long(header: list[str], rows: list[list[str]]) -> list[KernelProfile]:
    idx = {h: i for i, h in enumerate(header)}
    skip = {idx[c] for c in (*_LONG_COLUMNS, "Section Name") if c in idx}
    launches: dict[str, tuple[dict[str, str], dict[str, float], dict[str, str], list[str]]] = {}
    for n, row in enumerate(rows, start=1):
        if len(row) != len(header):
            raise NcuParseError(f"row {n} has {len(row)} cells, the header {len(header)}")
        key = row[idx["ID"]]
        if key not in launches:
            launches[key] = (_row_info(header, row, skip), {}, {}, [])
        _, metrics, units, na = launches[key]
        name, unit, cell = (row[idx[c]] for c in _LONG_COLUMNS)
        try:
            value = parse_value(cell)
        except ValueError as exc:
            raise NcuParseError(f"row {n}, metric {name}: {exc}") from exc
        if value is None:
            na.append(name)
            continue
        factor, base = parse_unit(unit)
        metrics[name] = value * factor
        units[name] = base
    return [_make_profile(info, m, u, na, f"launch {k}") for k, (info, m, u, na) in launches.items()]


# ---------------------------------------------------------------------------------------------
# Running ncu.


def find_ncu(ncu: str | os.PathLike[str] | None = None) -> Path:
    """Locate the ``ncu`` executable: the argument, ``VERIFORGE_NCU``, ``PATH``, ``CUDA_HOME/bin``,
    ``/usr/local/cuda/bin``, then ``/opt/nvidia/nsight-compute/*/``."""
    candidates: list[Path] = []
    for explicit in (ncu, os.environ.get("VERIFORGE_NCU")):
        if explicit:
            p = Path(explicit)
            candidates.append(p / "ncu" if p.is_dir() else p)
    on_path = shutil.which("ncu")
    if on_path:
        candidates.append(Path(on_path))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "bin" / "ncu")
    candidates.append(Path("/usr/local/cuda/bin/ncu"))
    candidates.extend(sorted(Path("/opt/nvidia/nsight-compute").glob("*/ncu"), reverse=True))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise ToolchainNotFoundError(
        "Nsight Compute (ncu) not found: install it with the CUDA toolkit or from "
        "https://developer.nvidia.com/nsight-compute, put it on PATH or set VERIFORGE_NCU"
    )


def ncu_command(
    program: str | os.PathLike[str] | Sequence[str],
    args: Sequence[str] = (),
    *,
    metrics: Sequence[str] | None = None,
    kernel_regex: str | None = None,
    launch_skip: int | None = None,
    launch_count: int | None = None,
    ncu: str | os.PathLike[str] = "ncu",
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The ``ncu --csv --page raw --metrics ...`` command line profiling ``program args``.

    ``metrics`` defaults to every metric the shared features need. ``kernel_regex`` limits
    profiling to matching kernel names; ``launch_skip``/``launch_count`` select launches (each
    profiled launch replays the kernel once per metric pass, so keep the count small).
    """
    names = list(metrics) if metrics is not None else feature_metrics()
    if not names:
        raise ValueError("ncu needs at least one metric")
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_.]+", n)]
    if bad:
        raise ValueError(f"not ncu metric names: {', '.join(bad)}")
    cmd = [str(ncu), "--csv", "--page", "raw", "--metrics", ",".join(names)]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    if launch_skip is not None:
        if launch_skip < 0:
            raise ValueError("launch_skip must be >= 0")
        cmd += ["--launch-skip", str(launch_skip)]
    if launch_count is not None:
        if launch_count < 1:
            raise ValueError("launch_count must be >= 1")
        cmd += ["--launch-count", str(launch_count)]
    cmd += list(extra_args)
    prog = [str(program)] if isinstance(program, str | os.PathLike) else [str(p) for p in program]
    return cmd + prog + [str(a) for a in args]


_PERMISSION_HINT = (
    "the GPU's performance counters are restricted to administrators (ERR_NVGPUCTRPERM): run as root or "
    "load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
    "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)


def run_ncu(
    program: str | os.PathLike[str] | Sequence[str],
    args: Sequence[str] = (),
    *,
    metrics: Sequence[str] | None = None,
    kernel_regex: str | None = None,
    launch_skip: int | None = None,
    launch_count: int | None = 1,
    ncu: str | os.PathLike[str] | None = None,
    timeout: float = 600.0,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
    expose: Sequence[str] = (),
) -> list[KernelProfile]:
    """Profile ``program`` under Nsight Compute and parse the result (needs a GPU).

    The program runs in :mod:`veriforge.sandbox` (``expose``: extra paths it may read, e.g. the
    libraries it loads); on timeout the whole tree is killed and
    :class:`~veriforge.errors.KernelTimeoutError` raised. Raises :class:`ProfileError` when ncu
    fails or profiles no kernel (with ncu's own error lines), and for counter permission errors.
    """
    from veriforge.errors import KernelTimeoutError

    exe = find_ncu(ncu)
    cmd = ncu_command(
        program,
        args,
        metrics=metrics,
        kernel_regex=kernel_regex,
        launch_skip=launch_skip,
        launch_count=launch_count,
        ncu=exe,
        extra_args=extra_args,
    )
    # ncu runs the program, and the program may be a candidate: it runs in the sandbox (GPU
    # policy). Counter access then needs non-admin profiling enabled (NVreg_RestrictProfilingToAdminUsers=0).
    import tempfile

    from veriforge.sandbox import ToolTimeoutError, run_tool

    lent = [str(Path(p).resolve()) for p in [*cmd, *expose] if os.path.isabs(str(p)) and Path(p).exists()]
    with tempfile.TemporaryDirectory(prefix="vf-ncu-") as tmp:
        try:
            _, _, res = run_tool(cmd, cwd=Path(cwd) if cwd is not None else Path(tmp), timeout=timeout, gpu=True,
                                 env=dict(env or {}), expose=lent)
        except ToolTimeoutError:
            raise KernelTimeoutError(
                f"ncu on {cmd[-1 - len(args)]} ran past {timeout:g} s and was killed"
            ) from None
    out, err = res.stdout_text, res.stderr_text
    text = out + "\n" + err
    if "ERR_NVGPUCTRPERM" in text:
        raise ProfileError(_PERMISSION_HINT)
    try:
        profiles = parse_ncu_csv(out)
    except NcuParseError:
        msgs = _messages(text) or [ln for ln in err.strip().splitlines()[-5:]]
        raise ProfileError(
            f"ncu exited with {res.exit_code if res.signal is None else -res.signal} and produced no profile"
            + (f": {' | '.join(msgs)}" if msgs else "")
        ) from None
    if not profiles:
        raise ProfileError("ncu profiled no kernel" + (f" matching {kernel_regex!r}" if kernel_regex else ""))
    return profiles
