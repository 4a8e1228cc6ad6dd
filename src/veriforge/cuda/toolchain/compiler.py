"""Compile CUDA source to a cubin or PTX for one architecture, with resources, diagnostics and a cache.

One call does what a person would do by hand: write the source somewhere, run
``nvcc -arch=sm_XX -cubin -Xptxas -v``, read the register/shared-memory report, and turn an
error into ``file:line:col: error: message`` against *their* file. PTX requests also run
``ptxas -v`` on the PTX (about 0.15 s), so resources are there for both output kinds.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from veriforge.cuda.toolchain.arch import validate_arch
from veriforge.cuda.toolchain.cache import ArtifactCache, cache_key
from veriforge.cuda.toolchain.demangle import demangle_names
from veriforge.cuda.toolchain.diagnostics import (
    CompileTimeoutError,
    Diagnostic,
    NvccCompileError,
    PathMap,
    error_summary,
    parse_nvcc_log,
    remap_log,
)
from veriforge.cuda.toolchain.locate import Toolchain, find_toolchain
from veriforge.cuda.toolchain.resources import (
    FunctionProperties,
    KernelResources,
    find_kernel,
    parse_ptxas_log,
)
from veriforge.errors import CudaError

OutputKind = Literal["cubin", "ptx"]

_DEFINE_NAME = re.compile(r"^[A-Za-z_]\w*(\([\w\s,]*\))?$")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
# Flags that would change what we produce or where it goes: owned by compile()'s own arguments.
_RESERVED = re.compile(
    r"^(-o|--output-file|-arch|--gpu-architecture|-code|--gpu-code|-gencode|--generate-code|-ptx|--ptx|"
    r"-cubin|--cubin|-fatbin|--fatbin|-c|--compile|-E|--preprocess|-M\w*|--dryrun|-run|--run|-lib|-dlink|"
    r"--device-link|-link|--link)(=.*)?$"
)


class InvalidFlagsError(CudaError, ValueError):
    """Flags or defines that compile() cannot honour (they clash with its own arguments)."""


@dataclass(frozen=True)
class CompileResult:
    """A compiled artefact plus everything learned while compiling it.

    ``resources`` maps each kernel's demangled name to its :class:`KernelResources`;
    ``device_functions`` holds non-inlined ``__device__`` functions (stack and spills only).
    ``diagnostics`` keeps the warnings of a successful compile. ``path`` is the artefact in the
    cache (stable, shared: copy it before modifying).
    """

    artifact: bytes
    path: Path
    resources: dict[str, KernelResources]
    log: str
    cached: bool
    arch: str
    flags: tuple[str, ...]
    output: OutputKind
    diagnostics: list[Diagnostic] = field(default_factory=list)
    device_functions: dict[str, FunctionProperties] = field(default_factory=dict)
    compiler_version: str = ""
    key: str = ""
    command: tuple[str, ...] = ()
    duration_s: float = 0.0

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    @property
    def ptx(self) -> str:
        """The PTX text (only for ``output="ptx"``)."""
        if self.output != "ptx":
            raise ValueError("this result is a cubin; compile with output='ptx' for PTX text")
        return self.artifact.decode()

    def kernel(self, name: str) -> KernelResources:
        """Resources of one kernel by demangled, mangled, ``name<T>`` or bare name."""
        return find_kernel(self.resources, name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary (no artefact bytes)."""
        return {
            "path": str(self.path),
            "arch": self.arch,
            "output": self.output,
            "flags": list(self.flags),
            "cached": self.cached,
            "compiler_version": self.compiler_version,
            "kernels": [k.to_dict() | {"short_name": k.short_name} for k in self.resources.values()],
            "device_functions": [f.to_dict() for f in self.device_functions.values()],
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


def _define_flags(defines: Mapping[str, Any] | None) -> list[str]:
    out = []
    for name, value in sorted((defines or {}).items()):
        if not _DEFINE_NAME.match(name):
            raise InvalidFlagsError(f"invalid macro name {name!r} in defines")
        out.append(f"-D{name}" if value is None else f"-D{name}={value}")
    return out


def _check_flags(flags: Sequence[str]) -> tuple[str, ...]:
    checked = tuple(str(f) for f in flags)
    for flag in checked:
        if _RESERVED.match(flag):
            raise InvalidFlagsError(
                f"flag {flag!r} is controlled by compile() itself (use arch=, output=, or the result's path)"
            )
    return checked


def _header_digests(source: str, include_dirs: Sequence[Path], limit: int = 256) -> dict[str, str]:
    """Hashes of the user headers the source pulls in with ``#include "..."`` (recursively).

    System headers (``<...>``) are covered by the compiler version in the cache key; user
    headers are not, so editing one must change the key.
    """
    digests: dict[str, str] = {}
    stack: list[tuple[str, Path | None]] = [(source, None)]
    while stack and len(digests) < limit:
        text, here = stack.pop()
        for name in _INCLUDE.findall(text):
            search = ([here] if here is not None else []) + list(include_dirs)
            for folder in search:
                candidate = (folder / name).resolve()
                if candidate.is_file():
                    key = str(candidate)
                    if key not in digests:
                        data = candidate.read_bytes()
                        digests[key] = hashlib.sha256(data).hexdigest()
                        stack.append((data.decode(errors="replace"), candidate.parent))
                    break
            else:
                digests.setdefault(f"missing:{name}", "")
    return digests


def _run(cmd: list[str], cwd: Path, timeout: float, expose: Iterable[str] = ()) -> tuple[int, str]:
    """Run nvcc/ptxas on (untrusted) source in the sandbox: the whole tree (cicc, ptxas) is killed
    on timeout, and an ``#include`` of a secret file or a cache finds nothing (docs/sandbox.md)."""
    from veriforge.sandbox import ToolTimeoutError, run_tool

    try:
        code, out, _ = run_tool(cmd, cwd=cwd, timeout=timeout, expose=list(expose))
    except ToolTimeoutError as exc:
        raise subprocess.TimeoutExpired(cmd, timeout) from exc
    return code, out


_COPY_INCLUDES_LIMIT = 64 << 20


def _lend_include_dirs(incs: list[Path], work: Path) -> tuple[list[Path], dict[str, str]]:
    """Include folders as the sandboxed nvcc will see them: small ones are copied into the work
    folder (the sandbox uid may not be able to read the user's own folders), big ones are exposed
    read-only where they are. Returns the folders to pass and {copy: original} for messages."""
    lent: list[Path] = []
    copies: dict[str, str] = {}
    for k, inc in enumerate(incs):
        if not inc.is_dir():
            lent.append(inc)
            continue
        size = 0
        for root, _, names in os.walk(inc):
            size += sum(os.path.getsize(os.path.join(root, n)) for n in names
                        if os.path.isfile(os.path.join(root, n)))
            if size > _COPY_INCLUDES_LIMIT:
                break
        if size > _COPY_INCLUDES_LIMIT:
            lent.append(inc)
            continue
        copy = work / f".vf-include-{k}"
        shutil.copytree(inc, copy, symlinks=False, dirs_exist_ok=True)
        lent.append(copy)
        copies[str(copy)] = str(inc)
    return lent, copies


def compile(
    source: str,
    *,
    arch: str = "sm_90",
    output: OutputKind = "cubin",
    flags: Iterable[str] = (),
    filename: str = "kernel.cu",
    defines: Mapping[str, Any] | None = None,
    include_dirs: Iterable[str | os.PathLike[str]] = (),
    timeout: float = 120.0,
    toolchain: Toolchain | None = None,
    cache: ArtifactCache | None = None,
    force: bool = False,
) -> CompileResult:
    """Compile ``source`` with nvcc for ``arch`` into a cubin or PTX, using the cache.

    ``filename`` is how diagnostics name the source (the user's path). ``force=True`` skips the
    cache lookup (the fresh result is still stored). Raises :class:`NvccCompileError` (with
    diagnostics) when the source does not compile, ``CompileTimeoutError`` past ``timeout``,
    ``InvalidArchError``/``InvalidFlagsError`` for bad arguments and ``ToolchainNotFoundError``
    when there is no nvcc.
    """
    if output not in ("cubin", "ptx"):
        raise InvalidFlagsError(f"output must be 'cubin' or 'ptx', not {output!r}")
    tc = toolchain or find_toolchain()
    arch = validate_arch(arch, tc.gpu_codes)
    user_flags = _check_flags(list(flags))
    define_flags = _define_flags(defines)
    incs = [Path(p).expanduser().resolve() for p in include_dirs]
    store = cache or ArtifactCache()
    base = Path(filename).name or "kernel.cu"
    if not base.endswith(".cu"):
        base += ".cu"

    key = cache_key(
        {
            "source": hashlib.sha256(source.encode("utf-8")).hexdigest(),
            "headers": _header_digests(source, incs),
            "flags": list(user_flags),
            "defines": define_flags,
            "include_dirs": [str(p) for p in incs],
            "arch": arch,
            "output": output,
            "compiler": tc.version,
            "filename": filename,
        }
    )
    if not force and (hit := store.get(key)) is not None:
        return _from_cache(hit, key)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="veriforge-nvcc-") as tmp:
        work = Path(tmp)
        src = work / base
        src.write_text(source, encoding="utf-8")
        out = work / f"out.{output}"
        paths = PathMap(
            user_file=filename,
            aliases=(base, str(src), f"./{base}", str(src.resolve())),
            source_lines=source.splitlines(),
        )
        cmd = [str(tc.nvcc), f"-arch={arch}", f"-{output}", "-o", str(out)]
        if output == "cubin":
            cmd += ["-Xptxas", "-v"]
        lent, copies = _lend_include_dirs(incs, work)
        cmd += [f"-I{p}" for p in lent] + define_flags + list(user_flags) + [base]
        try:
            rc, log = _run(cmd, work, timeout, [str(p) for p in lent])
            for copy, original in copies.items():  # messages name the user's folders, not our copies
                log = log.replace(copy, original)
            ptxas_log = log
            if rc == 0 and output == "ptx" and out.is_file():
                ptxas_cmd = [str(tc.ptxas), f"-arch={arch}", "-v", str(out), "-o", os.devnull]
                rc, ptxas_log = _run(ptxas_cmd, work, timeout)
                log = log + ptxas_log
                cmd_shown = [*cmd, "&&", *ptxas_cmd]
            else:
                cmd_shown = cmd
        except subprocess.TimeoutExpired as exc:
            raise CompileTimeoutError(
                f"{filename}: nvcc ran past its {timeout:g} s limit and was killed", [], "", command=cmd
            ) from exc

        report = parse_ptxas_log(ptxas_log, demangle=lambda names: demangle_names(names, str(tc.bin_dir)))
        demangled = {k.mangled: k.name for k in report.kernels} | {f.mangled: f.name for f in report.functions}
        # ptxas errors name kernels it never finished; demangle those too for the message.
        extra = [m for m in re.findall(r"'(_Z\w+)'", log) if m not in demangled]
        if extra:
            demangled |= demangle_names(extra, str(tc.bin_dir))
        diagnostics = parse_nvcc_log(log, paths, demangled)
        user_log = remap_log(log, paths)
        if rc != 0 or not out.is_file():
            raise NvccCompileError(
                error_summary(diagnostics, user_log), diagnostics, user_log, command=cmd_shown, returncode=rc
            )
        artifact = out.read_bytes()

    duration = time.perf_counter() - started
    kernels = {k.name: k for k in report.kernels if k.arch == arch}
    functions = {f.name: f for f in report.functions}
    meta = {
        "arch": arch,
        "output": output,
        "flags": list(user_flags),
        "log": user_log,
        "compiler_version": tc.version,
        "command": cmd_shown,
        "duration_s": duration,
        "kernels": [k.to_dict() for k in kernels.values()],
        "functions": [f.to_dict() for f in functions.values()],
        "diagnostics": [d.to_dict() for d in diagnostics],
    }
    path = store.put(key, artifact, meta, suffix=f".{output}")
    return CompileResult(
        artifact=artifact,
        path=path,
        resources=kernels,
        log=user_log,
        cached=False,
        arch=arch,
        flags=user_flags,
        output=output,
        diagnostics=diagnostics,
        device_functions=functions,
        compiler_version=tc.version,
        key=key,
        command=tuple(cmd_shown),
        duration_s=duration,
    )


def _from_cache(hit: tuple[bytes, dict[str, Any], Path], key: str) -> CompileResult:
    artifact, meta, path = hit
    kernels = [KernelResources.from_dict(k) for k in meta["kernels"]]
    functions = [FunctionProperties.from_dict(f) for f in meta["functions"]]
    return CompileResult(
        artifact=artifact,
        path=path,
        resources={k.name: k for k in kernels},
        log=meta["log"],
        cached=True,
        arch=meta["arch"],
        flags=tuple(meta["flags"]),
        output=meta["output"],
        diagnostics=[Diagnostic.from_dict(d) for d in meta["diagnostics"]],
        device_functions={f.name: f for f in functions},
        compiler_version=meta["compiler_version"],
        key=key,
        command=tuple(meta["command"]),
        duration_s=meta["duration_s"],
    )
