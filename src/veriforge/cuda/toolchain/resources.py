"""Per-kernel resource usage parsed from ``ptxas -v`` (``nvcc -Xptxas -v``) output.

Registers, static shared memory, stack, spills and barriers decide occupancy and explain most
"why is this kernel slow" questions, and ptxas prints them for free while it compiles. The
format (checked on CUDA 13.0 for sm_75 … sm_120) is, per kernel::

    ptxas info    : Compiling entry function '_Z3addPfS_' for 'sm_90'
    ptxas info    : Function properties for _Z3addPfS_
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 10 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]

``Function properties`` blocks for names that are not the entry being compiled belong to
non-inlined ``__device__`` functions; they are kept apart (:class:`FunctionProperties`) because
they have stack and spills but no registers or barriers of their own. The parser is lenient:
unknown ``N bytes <what>`` items are kept in ``extra`` instead of breaking on a new ptxas.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from veriforge.cuda.toolchain.demangle import Demangler, base_name, demangle_names, short_name

_PREFIX = re.compile(r"^\s*ptxas\s+(info|warning|error|fatal)\s*:\s*(.*)$")
_ENTRY = re.compile(r"^Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"^Function properties for (\S+)")
_OVERRIDE = re.compile(r"^Overriding maximum register limit \d+ for '([^']+)' with\s+(\d+)")
_USED = re.compile(r"^Used (\d+) registers(.*)$")
_COMPILE_TIME = re.compile(r"^Compile time = ([\d.]+) ms")
_BYTES_ITEM = re.compile(r"(\d+) bytes ([A-Za-z][A-Za-z ]*?)(?:\[(\d+)\])?\s*$")
_BARRIERS = re.compile(r"used (\d+) barriers?")
_STACK_LINE = re.compile(r"(\d+) bytes stack frame")


@dataclass(frozen=True, slots=True)
class KernelResources:
    """What ptxas allocated for one ``__global__`` function on one architecture.

    ``smem_static_bytes`` is static ``__shared__`` memory only: dynamic (``extern __shared__``)
    shared memory is a launch parameter and never appears here. ``cmem`` maps constant bank to
    bytes (sm_90 and newer no longer print bank 0). ``max_registers`` is set when
    ``-maxrregcount``/``__launch_bounds__`` capped the register count.
    """

    name: str
    mangled: str
    arch: str
    registers: int
    smem_static_bytes: int = 0
    stack_frame_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    barriers: int = 0
    cmem: dict[int, int] = field(default_factory=dict)
    cumulative_stack_bytes: int = 0
    max_registers: int | None = None
    compile_time_ms: float | None = None
    extra: dict[str, int] = field(default_factory=dict)

    @property
    def short_name(self) -> str:
        """``reduce_sum<256, float>`` for ``void reduce_sum<256, float>(float const*, float*, int)``."""
        return short_name(self.name)

    @property
    def base_name(self) -> str:
        """The name without template arguments (``reduce_sum``)."""
        return base_name(self.name)

    @property
    def spills(self) -> bool:
        """True when ptxas had to spill registers to local memory (a classic slowdown)."""
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cmem"] = {str(k): v for k, v in self.cmem.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelResources:
        values = dict(data)
        values["cmem"] = {int(k): int(v) for k, v in values.get("cmem", {}).items()}
        return cls(**values)


@dataclass(frozen=True, slots=True)
class FunctionProperties:
    """Stack and spills of a non-inlined ``__device__`` function (it has no registers of its own)."""

    name: str
    mangled: str
    arch: str
    stack_frame_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FunctionProperties:
        return cls(**data)


@dataclass(slots=True)
class PtxasReport:
    """Everything in one ``ptxas -v`` log: kernels, device functions, module-level memory, messages."""

    kernels: list[KernelResources] = field(default_factory=list)
    functions: list[FunctionProperties] = field(default_factory=list)
    gmem_bytes: dict[str, int] = field(default_factory=dict)
    module_cmem: dict[str, dict[int, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def archs(self) -> list[str]:
        seen: list[str] = []
        for k in self.kernels:
            if k.arch not in seen:
                seen.append(k.arch)
        return seen


@dataclass(slots=True)
class _Pending:
    """A kernel being assembled from the lines that follow its ``Compiling entry function``."""

    mangled: str
    arch: str
    registers: int | None = None
    values: dict[str, Any] = field(default_factory=dict)


def _parse_bytes_items(text: str) -> tuple[dict[str, int], dict[int, int]]:
    """``2048 bytes smem, 380 bytes cmem[0]`` → ({"smem": 2048}, {0: 380})."""
    plain: dict[str, int] = {}
    banks: dict[int, int] = {}
    for item in text.split(","):
        m = _BYTES_ITEM.search(item.strip())
        if not m:
            continue
        size, what, bank = int(m.group(1)), m.group(2).strip(), m.group(3)
        if bank is not None:
            banks[int(bank)] = banks.get(int(bank), 0) + size
        else:
            plain[what] = plain.get(what, 0) + size
    return plain, banks


def _parse_stack_line(text: str) -> dict[str, int]:
    plain, _ = _parse_bytes_items(text)
    return {
        "stack_frame_bytes": plain.get("stack frame", 0),
        "spill_store_bytes": plain.get("spill stores", 0),
        "spill_load_bytes": plain.get("spill loads", 0),
    }


def parse_ptxas_log(text: str, demangle: Demangler | None = None) -> PtxasReport:
    """Parse a full ``ptxas -v`` log (possibly for several architectures) into a :class:`PtxasReport`.

    Pure apart from ``demangle``: pass :func:`~veriforge.cuda.toolchain.demangle.no_demangle`
    (or any ``list[str] -> dict[str, str]``) to keep it free of subprocesses; the default batches
    every name through ``cu++filt``/``c++filt``.
    """
    report = PtxasReport()
    raw_kernels: list[_Pending] = []
    raw_functions: list[tuple[str, str, dict[str, int]]] = []
    overrides: dict[str, int] = {}
    current: _Pending | None = None
    props_for: str | None = None  # name of the last "Function properties for" header
    pending_module: tuple[int | None, dict[int, int]] | None = None
    last_arch = ""

    for line in text.splitlines():
        m = _PREFIX.match(line)
        if m is None:
            # Continuation line: the stack/spill numbers under "Function properties for X".
            if props_for is not None and _STACK_LINE.search(line):
                values = _parse_stack_line(line)
                if current is not None and props_for == current.mangled:
                    current.values.update(values)
                else:
                    raw_functions.append((props_for, last_arch, values))
                props_for = None
            continue
        level, body = m.group(1), m.group(2).strip()
        if level in ("error", "fatal"):
            report.errors.append(body)
            continue
        if level == "warning":
            report.warnings.append(body)
            continue
        if mm := _ENTRY.match(body):
            current = _Pending(mangled=mm.group(1), arch=mm.group(2))
            raw_kernels.append(current)
            last_arch = current.arch
            props_for = None
            if pending_module is not None:
                gmem, banks = pending_module
                if gmem is not None:
                    report.gmem_bytes[current.arch] = gmem
                if banks:
                    report.module_cmem[current.arch] = banks
                pending_module = None
        elif mm := _PROPS.match(body):
            props_for = mm.group(1)
            # The stack numbers may follow on the same line in some ptxas versions.
            rest = body[mm.end() :]
            if _STACK_LINE.search(rest):
                values = _parse_stack_line(rest)
                if current is not None and props_for == current.mangled:
                    current.values.update(values)
                else:
                    raw_functions.append((props_for, last_arch, values))
                props_for = None
        elif mm := _OVERRIDE.match(body):
            overrides[mm.group(1)] = int(mm.group(2))
        elif mm := _USED.match(body):
            if current is None:
                continue
            current.registers = int(mm.group(1))
            rest = mm.group(2)
            if bm := _BARRIERS.search(rest):
                current.values["barriers"] = int(bm.group(1))
            plain, banks = _parse_bytes_items(rest)
            current.values["smem_static_bytes"] = plain.pop("smem", 0)
            current.values["cumulative_stack_bytes"] = plain.pop("cumulative stack size", 0)
            current.values["cmem"] = banks
            current.values["extra"] = plain
        elif mm := _COMPILE_TIME.match(body):
            if current is not None:
                current.values["compile_time_ms"] = float(mm.group(1))
        elif "bytes gmem" in body or "cmem[" in body:
            plain, banks = _parse_bytes_items(body)
            pending_module = (plain.get("gmem"), banks)

    names = [k.mangled for k in raw_kernels] + [f[0] for f in raw_functions]
    demangled = (demangle or demangle_names)(names) if names else {}
    for k in raw_kernels:
        if k.registers is None:  # ptxas failed before allocating this kernel
            continue
        report.kernels.append(
            KernelResources(
                name=demangled.get(k.mangled, k.mangled),
                mangled=k.mangled,
                arch=k.arch,
                registers=k.registers,
                max_registers=overrides.get(k.mangled),
                **k.values,
            )
        )
    for mangled, arch, values in raw_functions:
        report.functions.append(
            FunctionProperties(name=demangled.get(mangled, mangled), mangled=mangled, arch=arch, **values)
        )
    return report


def parse_ptxas_verbose(
    text: str, *, arch: str | None = None, demangle: Demangler | None = None
) -> dict[str, KernelResources]:
    """Per-kernel resources keyed by demangled name (the ``name`` field).

    A log that covers several architectures needs ``arch`` to pick one; asking for an
    architecture the log does not mention gives an empty dict.
    """
    report = parse_ptxas_log(text, demangle=demangle)
    archs = report.archs
    if arch is None and len(archs) > 1:
        raise ValueError(f"log covers several architectures ({', '.join(archs)}); pass arch=")
    return {k.name: k for k in report.kernels if arch is None or k.arch == arch}


_INT_SUFFIX = re.compile(r"\b(\d+)(?:[uU](?:ll|LL|[lL])?|(?:ll|LL|[lL])[uU]?)\b")


def _plain_args(name: str) -> str:
    """``k<float, 256u, true>`` as ``k<float,256,true>``: the demangler writes unsigned template
    arguments with a suffix that people (and ``-t blockSize=256``) leave out."""
    return _INT_SUFFIX.sub(r"\1", name.replace(" ", ""))


def find_kernel(resources: dict[str, KernelResources], query: str) -> KernelResources:
    """Look a kernel up the way people name it: full demangled name, mangled, ``f<1>`` or ``f``.

    Raises KeyError listing the kernels when nothing (or more than one kernel) matches.
    """
    if query in resources:
        return resources[query]
    for matcher in (
        lambda k: k.mangled == query,
        lambda k: k.short_name == query,
        lambda k: k.short_name.replace(" ", "") == query.replace(" ", ""),
        lambda k: _plain_args(k.short_name) == _plain_args(query),
        lambda k: k.base_name == query,
    ):
        hits = [k for k in resources.values() if matcher(k)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise KeyError(f"{query!r} is ambiguous: {', '.join(sorted(k.short_name for k in hits))}")
    raise KeyError(f"no kernel {query!r}; kernels: {', '.join(sorted(k.short_name for k in resources.values()))}")
