"""nvcc builds for the GPU back-end: candidate shared libraries and the driver program.

Both are cached on disk by content (source, target architecture, flags, nvcc version) so an
unchanged candidate is built once per machine, and written by atomic rename so two workers
building the same key never see a half-written file. Everything links the CUDA runtime as a
*shared* library: the driver and every candidate library ``dlopen``ed into it must share one
runtime (one context, events usable across libraries).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from veriforge.core.paths import cache_dir
from veriforge.errors import CompileError

from .backend import CParam
from .gpu_driver import gpu_driver_source

__all__ = ["GpuInfo", "build_driver", "build_library", "detect_gpu", "runtime_lib_dirs"]

LIB_VERSION = "1"


class GpuInfo:
    """The first visible GPU as ``nvidia-smi`` reports it."""

    def __init__(self, name: str, compute_cap: str) -> None:
        self.name = name
        self.compute_cap = compute_cap  # "9.0"; "" when nvidia-smi is too old to say

    @property
    def arch(self) -> str:
        """``sm_90`` for compute capability 9.0; ``native`` (nvcc picks the GPU's) when unknown."""
        if re.fullmatch(r"\d+\.\d+", self.compute_cap):
            return "sm_" + self.compute_cap.replace(".", "")
        return "native"


@lru_cache(maxsize=1)
def detect_gpu() -> GpuInfo | None:
    """The first GPU (``None`` without a working driver). Honours ``CUDA_VISIBLE_DEVICES``."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        proc = subprocess.run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30)
        if proc.returncode != 0:
            proc = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                  text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    index = int(visible) if visible.isdigit() and int(visible) < len(lines) else 0
    parts = [p.strip() for p in lines[index].split(",")]
    return GpuInfo(parts[0], parts[1] if len(parts) > 1 else "")


def runtime_lib_dirs(cuda_home: Path) -> list[Path]:
    """Folders holding ``libcudart.so`` (for ``-L`` and the rpath of what we build)."""
    dirs = [cuda_home / "lib64", cuda_home / "lib", cuda_home / "targets" / "x86_64-linux" / "lib",
            cuda_home / "targets" / "sbsa-linux" / "lib"]
    return [d for d in dirs if (d / "libcudart.so").exists() or any(d.glob("libcudart.so*"))]


def _run(cmd: list[str], cwd: Path, timeout: float) -> tuple[int, str]:
    """nvcc on candidate source, in the sandbox (see :func:`veriforge.sandbox.run_tool`)."""
    from veriforge.sandbox import ToolTimeoutError, run_tool

    try:
        code, out, _ = run_tool(cmd, cwd=cwd, timeout=timeout)
    except ToolTimeoutError:
        raise CompileError(f"nvcc ran past {timeout:g} s and was stopped") from None
    return code, out


def _key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0\1")
    return h.hexdigest()


def _build(kind: str, source: str, filename: str, args: Sequence[str], arch: str, suffix: str,
           timeout: float) -> Path:
    from veriforge.cuda.toolchain import find_toolchain

    tc = find_toolchain()
    key = _key(LIB_VERSION, kind, source, arch, "\0".join(args), tc.version, filename)
    out_dir = cache_dir("gpu-eval")
    target = out_dir / f"{kind}-{key[:32]}{suffix}"
    if target.exists():
        return target
    rpath = []
    for d in runtime_lib_dirs(tc.cuda_home):
        rpath += [f"-L{d}", "-Xlinker", "-rpath", "-Xlinker", str(d)]
    # nvcc runs in the sandbox on candidate source: build in a private temp folder it may use,
    # then publish into the cache (which the sandbox cannot see).
    with tempfile.TemporaryDirectory(prefix="vf-gpu-build-") as tmp:
        src = Path(tmp) / filename
        src.write_text(source, encoding="utf-8")
        tmp_out = Path(tmp) / f"out{suffix}"
        cmd = [str(tc.nvcc), f"-arch={arch}", *args, "-cudart", "shared", "-o", str(tmp_out), src.name, *rpath]
        code, log = _run(cmd, Path(tmp), timeout)
        if code != 0 or not tmp_out.exists():
            log = log.replace(str(src), filename).replace(f"{tmp}/", "")
            errors = [ln.strip() for ln in log.splitlines() if " error" in ln or ln.startswith("error")]
            summary = "; ".join(errors[:5]) or (log.strip().splitlines() or ["nvcc failed"])[-1]
            raise CompileError(f"nvcc could not build {filename} for {arch}: {summary}", log=log)
        if tmp_out.is_symlink():
            raise CompileError(f"nvcc could not build {filename} for {arch}: the output is not a file", log=log)
        staged = out_dir / f".{target.name}.{os.getpid()}.tmp"
        shutil.copyfile(tmp_out, staged)
        os.chmod(staged, 0o755)
        os.replace(staged, target)
    return target


def build_library(source: str, arch: str, *, filename: str = "candidate.cu", flags: Sequence[str] = ("-O3",),
                  timeout: float = 180.0) -> Path:
    """Compile a candidate into a shared library (``-lineinfo`` so profiles map to source lines)."""
    name = filename if filename.endswith(".cu") else filename + ".cu"
    args = [*flags, "-lineinfo", "-shared", "-Xcompiler", "-fPIC"]
    return _build("lib", source, Path(name).name, args, arch, ".so", timeout)


def build_driver(entry: str, params: list[CParam], arch: str, *, timeout: float = 180.0) -> Path:
    """Compile the driver program for ``entry``'s signature (see :mod:`.gpu_driver`)."""
    source = gpu_driver_source(entry, params)
    return _build("driver", source, "vf_gpu_driver.cu", ["-O2", "-Xlinker", "--no-as-needed", "-ldl"], arch, "",
                  timeout)
