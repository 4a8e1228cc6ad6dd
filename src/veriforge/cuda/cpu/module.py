"""Compiled CUDA modules whose kernels Python can launch on the CPU runtime.

``Module.launch`` converts arguments using each kernel's real C++ signature (reported by the
compiled module itself, so templates, typedefs and structs are resolved by the compiler, not by
parsing): numpy arrays become device pointers and are written back in place, scalars are
converted to the parameter's C type with range checks. Kernels run in a per-module server process
(see :mod:`.worker`), so a crash or an endless loop becomes a :class:`KernelFault` /
:class:`KernelTimeoutError`, never a dead or hung caller.
"""

from __future__ import annotations

import re
import struct
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .build import (
    SHIM_FILE,
    BuiltRuntime,
    ProjectSources,
    build_executable,
    build_project_executable,
    check_source_supported,
    collect_project,
    runtime,
)
from .errors import CompileError, KernelFault, KernelTimeoutError, LaunchError
from .source import Project, ScannedSource, args_launch_shims, normalize_kernel_name, rewrite, scan
from .worker import KernelServer, ServerCrashed, ServerTimeout

__all__ = ["CallResult", "FunctionInfo", "KernelInfo", "LaunchResult", "Module", "Param", "RaceDifference",
           "RaceReport", "compile"]

MAX_DYNAMIC_SHARED = 232448  # 227 KB: the opt-in maximum of sm_90
DEFAULT_DYNAMIC_SHARED = 48 * 1024  # without cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
_BUF_ALIGN = 256


@dataclass(frozen=True)
class Param:
    """One kernel parameter as the compiler sees it."""

    kind: str  # p pointer, i signed int, u unsigned int, f float, b bool, s struct/other
    size: int
    align: int
    offset: int
    pointee_kind: str  # for pointers: p/i/u/f/b/s/v ('-' otherwise)
    pointee_size: int
    pointee_const: bool
    type: str


@dataclass(frozen=True)
class KernelInfo:
    name: str
    index: int
    blob_size: int
    params: tuple[Param, ...]

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(p.type for p in self.params)})"


@dataclass(frozen=True)
class FunctionInfo:
    """An ``extern "C"`` host function of the module, as the compiler sees it."""

    name: str
    index: int
    blob_size: int
    params: tuple[Param, ...]
    returns: Param  # kind 'v' for void
    problem: str  # why it cannot be called from Python ("" = callable)

    @property
    def signature(self) -> str:
        return f"{self.returns.type} {self.name}({', '.join(p.type for p in self.params)})"


@dataclass(frozen=True)
class CallResult:
    """What :meth:`Module.call` observed besides the return value (see ``Module.last_call``)."""

    function: str
    value: int | float | None
    seconds: float  # wall time of the host function, its kernels included (emulated, not GPU time)
    stdout: str  # printf output of the host function and of its kernels


@dataclass(frozen=True)
class LaunchResult:
    kernel: str
    seconds: float  # wall time of the grid on the CPU runtime (emulated, not GPU time)
    stdout: str  # device printf output of this launch


@dataclass(frozen=True)
class RaceDifference:
    arg_index: int
    param_type: str
    count: int  # elements that differ between the two thread orders
    first_indices: tuple[tuple[int, ...], ...]
    max_abs_diff: float


@dataclass(frozen=True)
class RaceReport:
    """Outcome of :meth:`Module.race_check`: outputs that depend on thread order."""

    kernel: str
    differences: tuple[RaceDifference, ...]

    @property
    def ok(self) -> bool:
        return not self.differences

    def __str__(self) -> str:
        if self.ok:
            return f"race check of '{self.kernel}': outputs identical in forward and reverse thread order"
        lines = [f"race check of '{self.kernel}': outputs depend on thread order (missing __syncthreads()?)"]
        for d in self.differences:
            idx = ", ".join(str(i if len(i) > 1 else i[0]) for i in d.first_indices)
            lines.append(f"  argument {d.arg_index} ({d.param_type}): {d.count} element(s) differ, "
                         f"first at [{idx}], max |diff| {d.max_abs_diff:g}")
        return "\n".join(lines)


_INT_FMT = {("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q",
            ("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q"}
_VEC = re.compile(r"^(?:const\s+)?(char|uchar|short|ushort|int|uint|long|ulong|longlong|ulonglong|float|double)"
                  r"([1-4])$")
_VEC_FMT = {"char": "b", "uchar": "B", "short": "h", "ushort": "H", "int": "i", "uint": "I", "long": "q",
            "ulong": "Q", "longlong": "q", "ulonglong": "Q", "float": "f", "double": "d"}


def _dims(value: Any, what: str) -> tuple[int, int, int]:
    if hasattr(value, "x"):
        dims = [value.x, getattr(value, "y", 1), getattr(value, "z", 1)]
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        dims = [int(value), 1, 1]
    elif isinstance(value, (tuple, list)) and 1 <= len(value) <= 3:
        dims = [*value, 1, 1, 1][:3]
    else:
        raise LaunchError(f"{what} must be an int or a tuple of 1-3 ints, got {value!r}")
    out = []
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise LaunchError(f"{what} {value!r}: dimensions must be integers")
        if d < 1:
            raise LaunchError(f"{what} {value!r}: every dimension must be >= 1")
        out.append(int(d))
    return out[0], out[1], out[2]


def _check_config(grid: tuple[int, int, int], block: tuple[int, int, int], shared: int, limit: int) -> None:
    threads = block[0] * block[1] * block[2]
    if threads > 1024:
        raise LaunchError(f"block {block} has {threads} threads; the limit is 1024")
    if block[0] > 1024 or block[1] > 1024 or block[2] > 64:
        raise LaunchError(f"block {block} exceeds the per-dimension limits (1024, 1024, 64)")
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise LaunchError(f"grid {grid} exceeds the limits (2^31-1, 65535, 65535)")
    if not isinstance(shared, (int, np.integer)) or shared < 0:
        raise LaunchError(f"shared_mem must be a non-negative int, got {shared!r}")
    if shared > limit:
        hint = (" (call set_max_dynamic_shared_memory() first, like cudaFuncSetAttribute on a GPU)"
                if limit < MAX_DYNAMIC_SHARED and shared <= MAX_DYNAMIC_SHARED else "")
        raise LaunchError(f"{shared} bytes of dynamic shared memory requested; the limit is {limit}{hint}")


def _scalar(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def _half_bits(x: float, bf16: bool) -> bytes:
    if bf16:
        bits = int(np.array(x, dtype=np.float32).view(np.uint32))
        if (bits & 0x7F800000) != 0x7F800000:  # round to nearest even unless inf/nan
            bits += 0x7FFF + ((bits >> 16) & 1)
        return struct.pack("<H", (bits >> 16) & 0xFFFF)
    return np.array(x, dtype=np.float16).tobytes()


class Module:
    """A CUDA translation unit compiled for the CPU runtime. Create with :func:`compile`."""

    def __init__(self, source: str | Project, *, defines: Mapping[str, Any] | None = None, sanitize: bool = False,
                 filename: str = "kernel.cu", timeout: float = 60.0) -> None:
        if not re.fullmatch(r"[\w.+-]+", filename):
            raise ValueError(f"filename must be a plain file name, got {filename!r}")
        self.sanitize = sanitize
        self.timeout = timeout
        self._rt: BuiltRuntime = runtime(sanitize)
        self.project: Project | None = source if isinstance(source, Project) else None
        self._sources: ProjectSources | None = None
        if self.project is not None:
            if defines:
                raise ValueError("give a Project's macros as Project.defines, not defines=")
            self._sources = collect_project(self.project)
            self._sources.check_supported(self._rt)
            self.source = self._sources.units[0].text
            self.filename = self._sources.units[0].display
            self.defines = dict(self.project.defines)
            self._scanned: ScannedSource = self._merged_scan(self._sources)
            self._rewritten = ""
        else:
            self.source = source
            self.filename = filename
            self.defines = dict(defines or {})
            self._scanned = scan(source)
            prelude = "".join(f"#define {n}" + ("" if v is None else f" {_define_value(v)}") + "\n"
                              for n, v in self.defines.items() if re.fullmatch(r"[A-Za-z_]\w*", n))
            check_source_supported(self._rt, self._scanned, filename, prelude)
            self._rewritten = rewrite(self._scanned)
        self._instantiations: dict[str, str] = {}  # registered name -> C++ function expression
        self._aliases: dict[str, str] = {}
        self._max_shared: dict[str, int] = {}
        self._lock = threading.RLock()
        self._server: KernelServer | None = None
        self._kernels: dict[str, KernelInfo] | None = None
        self._functions: dict[str, FunctionInfo] | None = None
        self.last_call: CallResult | None = None
        self._exe = self._build(self._instantiations)
        self._finalizer = weakref.finalize(self, Module._shutdown, [None])

    # ---- building -----------------------------------------------------------------------------
    def _text(self, instantiations: Mapping[str, str]) -> str:
        parts = []
        for name, value in self.defines.items():
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise ValueError(f"invalid macro name {name!r}")
            parts.append(f"#define {name}" + ("" if value is None else f" {_define_value(value)}"))
        if self._scanned.has_main:
            parts.append("#define main vf_user_main_unused_")
        parts.append(f'#line 1 "{self.filename}"')
        parts.append(self._rewritten)
        parts.append(f'\n#undef main\n#line 1 "{SHIM_FILE}"')
        n = 0
        for k in self._scanned.plain_kernels:
            parts.append(f'static ::vf::KernelShim<::vf::kernel_ptr(&{k.name})> vf_launch_shim_{n}("{k.name}");')
            n += 1
        for name, expr in instantiations.items():
            parts.append(f'static ::vf::KernelShim<::vf::kernel_ptr(&{expr})> vf_launch_shim_{n}("{name}");')
            n += 1
        for i, f in enumerate(self._scanned.host_functions):
            parts.append(f'static ::vf::FunctionRegistrar vf_call_shim_{i}("{f.name}", &{f.expr});')
        parts.extend(args_launch_shims(self._scanned))
        return "\n".join(parts) + "\n"

    def _build(self, instantiations: Mapping[str, str]) -> Path:
        if self._sources is not None:
            return build_project_executable(self._rt, self._sources, self._project_texts(instantiations),
                                            kind="module")
        return build_executable(self._rt, self._text(instantiations), kind="module", user_file=self.filename,
                                user_source=self.source)

    @staticmethod
    def _merged_scan(sources: ProjectSources) -> ScannedSource:
        """What the module offers, over all files of a project: kernels, host functions, main."""
        merged = ScannedSource(text="", masked="")
        counts: dict[str, int] = {}
        cuda = {f.path for u in sources.cuda_units for f in sources.closure(u)}
        for f in sources.files:
            if f.path not in cuda:
                continue
            for k in f.scanned.kernels:
                if k.name not in {m.name for m in merged.kernels}:
                    merged.kernels.append(k)
                counts[k.name] = counts.get(k.name, 0) + 1
            merged.overloaded |= f.scanned.overloaded
            merged.has_main = merged.has_main or f.scanned.has_main
            names = {h.name for h in merged.host_functions}
            merged.host_functions += [h for h in f.scanned.host_functions if h.name not in names]
        return merged

    def _project_texts(self, instantiations: Mapping[str, str]) -> dict[str, str]:
        """Each translation unit of the project with the registrations of the kernels and host
        functions it (or a user header it includes) defines; each kernel registered once."""
        assert self._sources is not None
        sources = self._sources
        texts = sources.staged_texts()
        done_kernels: set[str] = set()
        done_functions: set[str] = set()
        pending = dict(instantiations)
        n = 0
        for unit in sources.units:
            if unit.scanned.has_main and unit.kind != "c":
                where = unit.staged_as_unit()
                texts[where] = "#define main vf_user_main_unused_\n" + texts[where] + "#undef main\n"
        for unit in sources.cuda_units:
            closure = sources.closure(unit)
            lines = [f'#line 1 "{SHIM_FILE}"']
            templates = {k.name for f in closure for k in f.scanned.template_kernels}
            for f in closure:
                for k in f.scanned.plain_kernels:
                    if k.name not in done_kernels:
                        done_kernels.add(k.name)
                        lines.append(f'static ::vf::KernelRegistrar vf_launch_shim_{n}("{k.name}", &{k.name});')
                        n += 1
                for h in f.scanned.host_functions:
                    if h.name not in done_functions:
                        done_functions.add(h.name)
                        lines.append(f'static ::vf::FunctionRegistrar vf_call_shim_{n}("{h.name}", &{h.expr});')
                        n += 1
            for name, expr in list(pending.items()):
                if expr.split("<")[0] in templates:
                    lines.append(f'static ::vf::KernelRegistrar vf_launch_shim_{n}("{name}", &{expr});')
                    n += 1
                    del pending[name]
            lines.extend(args_launch_shims(unit.scanned))
            texts[unit.staged] += "\n".join(lines) + "\n"
        if pending:
            raise CompileError(f"no translation unit defines the template kernel(s) {', '.join(pending)}", [], "")
        return texts

    # ---- the server ---------------------------------------------------------------------------
    @staticmethod
    def _shutdown(holder: list) -> None:
        server = holder[0]
        if server is not None:
            server.close()

    def _ensure_server(self) -> KernelServer:
        if self._server is None or not self._server.alive:
            if self._server is not None:
                self._server.close()
            env = None
            if self.sanitize:
                import os

                env = dict(os.environ)
                env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1:abort_on_error=0:symbolize=1:" \
                                      "allocator_may_return_null=1"
            self._server = KernelServer(self._exe, env=env)
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, Module._shutdown, [self._server])
        return self._server

    def close(self) -> None:
        """Stop the module's kernel server (it restarts on the next launch)."""
        with self._lock:
            if self._server is not None:
                self._server.close()
                self._server = None

    def __enter__(self) -> Module:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def kernels(self) -> dict[str, KernelInfo]:
        """Launchable kernels (plain kernels plus template instantiations used so far)."""
        with self._lock:
            if self._kernels is None:
                server = self._ensure_server()
                try:
                    text = server.describe(timeout=60.0)
                except ServerCrashed as exc:
                    raise KernelFault(f"the compiled module failed to start: {exc.stderr.strip()}") from exc
                kernels: dict[str, KernelInfo] = {}
                for index, line in enumerate(text.splitlines()):
                    name, blob, params = line.split("\t")
                    kernels[name] = KernelInfo(name, index, int(blob), tuple(_parse_params(params)))
                self._kernels = kernels
            return dict(self._kernels)

    @property
    def functions(self) -> dict[str, FunctionInfo]:
        """``extern "C"`` host functions defined in the source, callable with :meth:`call`."""
        with self._lock:
            if self._functions is None:
                server = self._ensure_server()
                try:
                    text = server.describe_functions(timeout=60.0)
                except ServerCrashed as exc:
                    raise KernelFault(f"the compiled module failed to start: {exc.stderr.strip()}") from exc
                functions: dict[str, FunctionInfo] = {}
                for index, line in enumerate(text.splitlines()):
                    name, blob, ret, problem, params = line.split("\t")
                    functions[name] = FunctionInfo(name, index, int(blob), tuple(_parse_params(params)),
                                                   _parse_param(ret), problem)
                self._functions = functions
            return dict(self._functions)

    @property
    def last_stdout(self) -> str:
        """printf output of the most recent :meth:`call` ("" before the first)."""
        return self.last_call.stdout if self.last_call is not None else ""

    @property
    def template_kernels(self) -> list[str]:
        """Names of template kernels; launch one as ``"name<args>"``."""
        return [k.name for k in self._scanned.template_kernels]

    def _resolve(self, kernel: str) -> KernelInfo:
        if not isinstance(kernel, str) or not kernel.strip():
            raise LaunchError(f"kernel must be a name, got {kernel!r}")
        name = normalize_kernel_name(kernel)
        kernels = self.kernels
        name = self._aliases.get(name, name)
        if name in kernels:
            return kernels[name]
        short = [k for k in kernels if k.split("<")[0].split("::")[-1] == name.split("<")[0] and
                 k[len(k.split("<")[0]):] == name[len(name.split("<")[0]):]]
        if len(short) == 1:
            return kernels[short[0]]
        if "<" in name and name.endswith(">"):
            base, targs = name[: name.index("<")], name[name.index("<"):]
            templates = [t for t in self.template_kernels if t == base or t.split("::")[-1] == base]
            if len(templates) == 1:
                return self._instantiate(kernel, templates[0] + targs, name)
        available = sorted(kernels) + [f"{t}<...>" for t in self.template_kernels]
        if name in self._scanned.overloaded:
            raise LaunchError(f"kernel '{kernel}' is overloaded; overloaded kernels cannot be launched by name")
        raise LaunchError(f"unknown kernel '{kernel}'; this module has: {', '.join(available) or 'no kernels'}")

    def _instantiate(self, requested: str, qualified: str, alias: str) -> KernelInfo:
        wanted = dict(self._instantiations)
        wanted[qualified] = qualified
        try:
            exe = self._build(wanted)
        except CompileError as exc:
            raise LaunchError(f"cannot instantiate kernel '{requested}': {exc}") from exc
        self.close()
        self._exe = exe
        self._instantiations = wanted
        self._kernels = None
        self._functions = None
        self._aliases[alias] = qualified
        return self.kernels[qualified]

    def set_max_dynamic_shared_memory(self, kernel: str, nbytes: int) -> None:
        """Allow a kernel more than 48 KB of dynamic shared memory (like cudaFuncSetAttribute with
        cudaFuncAttributeMaxDynamicSharedMemorySize on a GPU; at most 227 KB)."""
        if not 0 <= nbytes <= MAX_DYNAMIC_SHARED:
            raise LaunchError(f"dynamic shared memory limit must be within 0..{MAX_DYNAMIC_SHARED}, got {nbytes}")
        with self._lock:
            self._max_shared[self._resolve(kernel).name] = int(nbytes)

    # ---- launching ----------------------------------------------------------------------------
    def _pack(self, info: KernelInfo | FunctionInfo, args: Sequence[Any], *, what: str = "kernel",
              zero_d_is_scalar: bool = True):
        if not isinstance(args, (list, tuple)):
            raise LaunchError(f"args must be a list, got {type(args).__name__}")
        if len(args) != len(info.params):
            raise LaunchError(f"{what} '{info.name}' takes {len(info.params)} argument(s) "
                              f"({', '.join(p.type for p in info.params)}), got {len(args)}")
        blob = bytearray(info.blob_size)
        arrays: list[np.ndarray] = []
        written: list[bool] = []
        index_of: dict[tuple, int] = {}
        patches: list[tuple[int, int]] = []
        for i, (p, raw) in enumerate(zip(info.params, args, strict=True)):
            a = _scalar(raw) if zero_d_is_scalar else raw
            where = f"argument {i} ({p.type})"
            if p.kind == "p":
                if a is None:
                    patches.append((p.offset, -1))
                    continue
                if not isinstance(a, np.ndarray):
                    raise LaunchError(f"{where} is a pointer: pass a numpy array (or None), got {type(a).__name__}")
                _check_pointer_array(where, p, a)
                key = (a.__array_interface__["data"][0], a.nbytes, a.dtype.str, a.shape, a.strides)
                if key not in index_of:
                    index_of[key] = len(arrays)
                    arrays.append(a)
                    written.append(False)
                k = index_of[key]
                if not p.pointee_const:
                    if not a.flags.writeable:
                        raise LaunchError(f"{where} is a non-const pointer but the array is read-only")
                    written[k] = True
                patches.append((p.offset, k))
            elif p.kind in "iu":
                if isinstance(a, (float, np.floating, complex)) or not isinstance(a, (int, np.integer)):
                    raise LaunchError(f"{where} expects an integer, got {a!r}")
                v = int(a)
                bits = 8 * p.size
                lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if p.kind == "i" else (0, (1 << bits) - 1)
                if not lo <= v <= hi:
                    raise LaunchError(f"{where}: {v} is out of range [{lo}, {hi}]")
                struct.pack_into("<" + _INT_FMT[(p.kind, p.size)], blob, p.offset, v)
            elif p.kind == "f":
                if not isinstance(a, (int, float, np.integer, np.floating)) or isinstance(a, bool):
                    raise LaunchError(f"{where} expects a number, got {a!r}")
                struct.pack_into("<f" if p.size == 4 else "<d", blob, p.offset, float(a))
            elif p.kind == "b":
                if not isinstance(a, (bool, np.bool_, int, np.integer)):
                    raise LaunchError(f"{where} expects a bool, got {a!r}")
                struct.pack_into("<?", blob, p.offset, bool(a))
            else:
                blob[p.offset : p.offset + p.size] = _struct_bytes(where, p, a)
        return blob, arrays, written, patches

    @staticmethod
    def _stage(server: KernelServer, arrays: list[np.ndarray]) -> tuple[Any, list[int]]:
        """Copy the argument arrays into the server's shared memory; returns it and their offsets."""
        offsets, total = [], 0
        for a in arrays:
            offsets.append(total)
            total += (max(a.nbytes, 1) + _BUF_ALIGN - 1) // _BUF_ALIGN * _BUF_ALIGN
        shm = server.ensure_shm(total)
        for a, off in zip(arrays, offsets, strict=True):
            if a.nbytes:
                dst = np.frombuffer(shm, dtype=np.uint8, count=a.nbytes, offset=off)
                dst[:] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
                del dst
        return shm, offsets

    @staticmethod
    def _write_back(shm: Any, arrays: list[np.ndarray], offsets: list[int], written: list[bool]) -> None:
        for a, off, w in zip(arrays, offsets, written, strict=True):
            if w and a.nbytes:
                src = np.frombuffer(shm, dtype=a.dtype, count=a.size, offset=off).reshape(a.shape)
                a[...] = src
                del src

    def _resolve_function(self, function: str) -> FunctionInfo:
        if not isinstance(function, str) or not function.strip():
            raise LaunchError(f"function must be a name, got {function!r}")
        functions = self.functions
        info = functions.get(function.strip())
        if info is None:
            callable_ = [f.signature for f in functions.values() if not f.problem]
            hint = ""
            if function.strip() in self.kernels or function.strip() in self.template_kernels:
                hint = f" ('{function}' is a __global__ kernel: run it with launch())"
            raise LaunchError(f"unknown host function '{function}'{hint}; the extern \"C\" functions of this "
                              f"module are: {'; '.join(callable_) or 'none'}")
        if info.problem:
            raise LaunchError(f"host function '{info.signature}' cannot be called from Python: {info.problem}")
        return info

    def call(self, function: str, args: Sequence[Any], *, timeout: float | None = None) -> int | float | None:
        """Call the ``extern "C"`` host function ``function(*args)`` and return its result.

        The function receives *device* pointers for numpy arrays and launches kernels itself,
        exactly as the host launcher of a real extension does; arrays behind non-const pointers are
        written back in place after it returned (all its work is synchronous here). Scalars are
        converted to the parameter types of its C signature. Returns None for ``void``, else an
        int or float. ``self.last_call`` (a CallResult) keeps its printf output and time - also
        when the call raised, so a failing candidate's own diagnostics stay visible.

        Raises LaunchError (unknown function, wrong arguments, a launch inside it with an invalid
        configuration), KernelFault (a fault in one of its kernels - barrier misuse, sanitizer
        report - or a crash of the host code itself) or KernelTimeoutError.
        """
        with self._lock:
            info = self._resolve_function(function)
            blob, arrays, written, patches = self._pack(info, args, what="host function", zero_d_is_scalar=False)
            server = self._ensure_server()
            shm, offsets = self._stage(server, arrays)
            limit = self.timeout if timeout is None else timeout
            self.last_call = None
            try:
                reply = server.call(info.index, bytes(blob),
                                    [(off, a.nbytes) for a, off in zip(arrays, offsets, strict=True)], patches,
                                    timeout=limit)
            except ServerTimeout:
                self._server = None
                self.last_call = CallResult(info.name, None, limit, server.stdout_text())
                raise KernelTimeoutError(
                    f"host function '{info.name}' did not finish within {limit:g} s and was stopped (an endless "
                    f"loop in it or in one of its kernels, or simply too much work for the CPU runtime)"
                ) from None
            except ServerCrashed as exc:
                self._server = None
                self.last_call = CallResult(info.name, None, 0.0, server.stdout_text())
                raise KernelFault(_crash_message(info.name, exc, self.filename, self.sanitize,
                                                 what="host function")) from None
            if reply.status != 0:  # a failed launch inside: keep its printf output for diagnosis
                self.last_call = CallResult(info.name, None, reply.seconds, reply.stdout)
            if reply.status == 1:
                raise LaunchError(f"host function '{info.name}': {reply.text}")
            if reply.status != 0:
                raise KernelFault(f"host function '{info.name}': {reply.text}")
            self._write_back(shm, arrays, offsets, written)
            value = _return_value(info.returns, reply.raw)
            self.last_call = CallResult(function=info.name, value=value, seconds=reply.seconds, stdout=reply.stdout)
            return value

    def _run(self, info: KernelInfo, grid, block, args, shared_mem: int, *, reverse: bool,
             timeout: float | None) -> LaunchResult:
        g, b = _dims(grid, "grid"), _dims(block, "block")
        _check_config(g, b, shared_mem, self._max_shared.get(info.name, DEFAULT_DYNAMIC_SHARED))
        blob, arrays, written, patches = self._pack(info, args)
        server = self._ensure_server()
        shm, offsets = self._stage(server, arrays)
        limit = self.timeout if timeout is None else timeout
        try:
            reply = server.launch(info.index, g, b, int(shared_mem), bytes(blob),
                                  [(off, a.nbytes) for a, off in zip(arrays, offsets, strict=True)], patches,
                                  reverse=reverse, timeout=limit)
        except ServerTimeout:
            self._server = None
            raise KernelTimeoutError(
                f"kernel '{info.name}' did not finish within {limit:g} s and was stopped (an endless loop, "
                f"a spin-wait on another block, or simply too much work for the CPU runtime)"
            ) from None
        except ServerCrashed as exc:
            self._server = None
            raise KernelFault(_crash_message(info.name, exc, self.filename, self.sanitize)) from None
        if reply.status == 1:
            raise LaunchError(reply.text)
        if reply.status != 0:
            raise KernelFault(reply.text)
        self._write_back(shm, arrays, offsets, written)
        return LaunchResult(kernel=info.name, seconds=reply.seconds, stdout=reply.stdout)

    def launch(self, kernel: str, grid, block, args: Sequence[Any], shared_mem: int = 0, *,
               timeout: float | None = None) -> LaunchResult:
        """Run ``kernel<<<grid, block, shared_mem>>>(*args)`` on the CPU.

        Arrays passed for non-const pointer parameters are updated in place. Raises
        LaunchError (bad configuration, unknown kernel, wrong arguments), KernelFault
        (barrier misuse, deadlock, crash, sanitizer report) or KernelTimeoutError.
        """
        with self._lock:
            info = self._resolve(kernel)
            return self._run(info, grid, block, args, shared_mem, reverse=False, timeout=timeout)

    def race_check(self, kernel: str, grid, block, args: Sequence[Any], shared_mem: int = 0, *,
                   rtol: float = 1e-5, atol: float = 1e-8, timeout: float | None = None) -> RaceReport:
        """Run the launch twice - blocks and threads in forward, then in reverse order - on copies
        of the arrays and report every output that differs.

        Correct CUDA code cannot depend on the order threads run between barriers, so a
        difference is a race: typically a missing ``__syncthreads()``. Floating-point outputs are
        compared with ``rtol``/``atol`` so that atomics summing in a different order do not count.
        The caller's arrays are not modified.
        """
        with self._lock:
            info = self._resolve(kernel)
            runs = []
            for reverse in (False, True):
                memo: dict[int, np.ndarray] = {}
                copied = []
                for a in args:
                    if isinstance(a, np.ndarray) and a.ndim > 0:
                        memo.setdefault(id(a), a.copy())
                        copied.append(memo[id(a)])
                    else:
                        copied.append(a)
                self._run(info, grid, block, copied, shared_mem, reverse=reverse, timeout=timeout)
                runs.append(copied)
        diffs = []
        for i, p in enumerate(info.params):
            fwd, rev = runs[0][i], runs[1][i]
            if p.kind != "p" or p.pointee_const or not isinstance(fwd, np.ndarray):
                continue
            if fwd.dtype.kind in "fc":
                bad = ~np.isclose(fwd, rev, rtol=rtol, atol=atol, equal_nan=True)
            else:
                bad = fwd != rev
            count = int(np.count_nonzero(bad))
            if count:
                first = tuple(tuple(int(x) for x in idx) for idx in np.argwhere(bad)[:5])
                if fwd.dtype.kind in "fciu":
                    delta = np.abs(fwd[bad].astype(np.float64) - rev[bad].astype(np.float64))
                    max_diff = float(np.nanmax(delta)) if delta.size and not np.all(np.isnan(delta)) else float("nan")
                else:
                    max_diff = float("nan")
                diffs.append(RaceDifference(i, p.type, count, first, max_diff))
        return RaceReport(kernel=info.name, differences=tuple(diffs))


def _parse_param(text: str) -> Param:
    kind, size, align, offset, pk, ps, pc, ptype = text.split(",", 7)
    return Param(kind, int(size), int(align), int(offset), pk, int(ps), pc == "1", ptype)


def _parse_params(text: str) -> list[Param]:
    return [_parse_param(p) for p in text.split(";")] if text else []


def _return_value(ret: Param, raw: bytes) -> int | float | None:
    """A host function's return value (8 little-endian bytes from the server) as a Python number."""
    if ret.kind == "v":
        return None
    if ret.kind in "iu":
        return struct.unpack_from("<" + _INT_FMT[(ret.kind, ret.size)], raw)[0]
    if ret.kind == "f":
        return struct.unpack_from("<f" if ret.size == 4 else "<d", raw)[0]
    if ret.kind == "b":
        return bool(raw[0])
    if ret.size == 2 and re.search(r"bfloat16", ret.type):
        return float(np.array([int.from_bytes(raw[:2], "little") << 16], dtype=np.uint32).view(np.float32)[0])
    if ret.size == 2 and re.search(r"half", ret.type):
        return float(np.frombuffer(raw[:2], dtype=np.float16)[0])
    raise LaunchError(f"cannot convert a return value of type {ret.type}")


def _define_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _check_pointer_array(where: str, p: Param, a: np.ndarray) -> None:
    dt = a.dtype
    if dt.hasobject:
        raise LaunchError(f"{where}: object arrays cannot be passed to a kernel")
    pk, ps = p.pointee_kind, p.pointee_size
    if pk == "p":
        raise LaunchError(f"{where}: pointer-to-pointer parameters cannot be passed from Python")
    ok = True
    expected = ""
    if pk == "f":
        ok, expected = dt.kind == "f" and dt.itemsize == ps, f"float{8 * ps}"
    elif pk in "iu":
        ok, expected = dt.kind in "iub" and dt.itemsize == ps, f"a {ps}-byte integer dtype"
    elif pk == "b":
        ok, expected = dt.itemsize == 1, "bool"
    elif pk == "s" and ps:
        if re.search(r"half|bfloat16", p.type) and ps == 2:
            ok, expected = dt.itemsize == 2, "float16 / uint16"
        else:
            ok, expected = a.nbytes % ps == 0, f"a multiple of {ps} bytes"
    if not ok:
        raise LaunchError(f"{where}: got a {dt} array, expected {expected}")


def _struct_bytes(where: str, p: Param, a: Any) -> bytes:
    tname = p.type.strip()
    if isinstance(a, (bytes, bytearray, memoryview)):
        data = bytes(a)
    elif isinstance(a, (np.void, np.ndarray)):
        data = np.asarray(a).tobytes()
    elif hasattr(a, "_fields_") or hasattr(a, "_type_"):  # ctypes
        data = bytes(memoryview(a))
    elif re.fullmatch(r"(?:const\s+)?(?:__half|half)", tname) and isinstance(a, (int, float, np.number)):
        data = _half_bits(float(a), bf16=False)
    elif re.fullmatch(r"(?:const\s+)?__nv_bfloat16", tname) and isinstance(a, (int, float, np.number)):
        data = _half_bits(float(a), bf16=True)
    elif isinstance(a, (tuple, list)) and (m := _VEC.match(tname.replace("unsigned ", "u"))):
        comp, n = m.group(1), int(m.group(2))
        if len(a) != n:
            raise LaunchError(f"{where} has {n} components, got {len(a)}")
        data = struct.pack("<" + _VEC_FMT[comp] * n, *a)
        data += b"\0" * (p.size - len(data))
    elif isinstance(a, (tuple, list)) and tname in ("dim3", "uint3") and 1 <= len(a) <= 3:
        data = struct.pack("<III", *[*a, 1, 1][:3])
    else:
        raise LaunchError(f"{where} is passed by value: give bytes, a numpy structured scalar or a ctypes "
                          f"structure of {p.size} bytes (got {type(a).__name__})")
    if len(data) != p.size:
        raise LaunchError(f"{where} needs exactly {p.size} bytes, got {len(data)}")
    return data


_ASAN_KIND = re.compile(r"ERROR: AddressSanitizer: ([\w-]+)")
_ASAN_ACCESS = re.compile(r"^(READ|WRITE) of size (\d+)", re.M)


def _crash_message(name: str, exc: ServerCrashed, filename: str, sanitize: bool, what: str = "kernel") -> str:
    """A server crash as a KernelFault message: the sanitizer's verdict with the user's line, a
    failed assert, or the signal (with the running kernel's name when the crash was in one)."""
    report = exc.stderr.strip()
    kind = _ASAN_KIND.search(report)
    if kind:
        access = _ASAN_ACCESS.search(report)
        frames = re.findall(re.escape(filename) + r":(\d+)(?::(\d+))?", report)
        where = f" at {filename}:{frames[0][0]}" if frames else ""
        detail = f" ({access.group(1)} of size {access.group(2)})" if access else ""
        return f"{what} '{name}': {kind.group(1)}{detail}{where}\n{report[-3000:]}"
    assertion = re.search(r"^.*Assertion .* failed\.?$", report, re.M)
    if assertion:
        return f"{what} '{name}': device assertion failed: {assertion.group(0).strip()}"
    hint = "" if sanitize else " (compile with sanitize=True to locate an out-of-bounds access)"
    return f"{what} '{name}' crashed{hint}: {report[-3000:] or 'no output'}"


def compile(source: str | Project, *, defines: Mapping[str, Any] | None = None, sanitize: bool = False,
            filename: str = "kernel.cu", timeout: float = 60.0) -> Module:
    """Compile CUDA C++ for the CPU runtime. Raises CompileError / UnsupportedFeatureError.

    ``source`` is one translation unit's text, or a :class:`~veriforge.cuda.cpu.Project` (several
    files linked together, include dirs, macros in ``Project.defines``): then the kernels and
    ``extern "C"`` functions of every CUDA unit and of the user headers they include can be
    launched / called by name.

    ``defines`` become ``#define`` lines ahead of the source (``None`` = defined without value);
    ``sanitize=True`` builds with AddressSanitizer (out-of-bounds accesses are reported with the
    kernel's source line); ``timeout`` is the default per-launch time limit in seconds.
    """
    return Module(source, defines=defines, sanitize=sanitize, filename=filename, timeout=timeout)
