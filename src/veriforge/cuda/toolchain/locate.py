"""Find ``nvcc``/``ptxas`` and learn what they are (version, CUDA root, include dirs, targets).

Search order, first hit wins (the most explicit choice first, so a user can always override):

1. the ``nvcc`` argument of :func:`find_toolchain`;
2. ``VERIFORGE_NVCC`` (path to ``nvcc`` or to a CUDA root that has ``bin/nvcc``);
3. ``CUDA_HOME``, then ``CUDA_PATH`` (a CUDA root, the convention of PyTorch and CMake);
4. ``nvcc`` on ``PATH``;
5. ``/usr/local/cuda``;
6. the PyPI wheel ``nvidia-cuda-nvcc`` in any ``site-packages`` on ``sys.path``
   (``nvidia/cu13/bin/nvcc`` for CUDA 13 wheels, ``nvidia/cuda_nvcc/bin/nvcc`` for CUDA 12 ones).

``nvcc`` on PATH is often a wrapper script or a symlink, so the real CUDA root is asked from
``nvcc --dryrun`` (its ``_HERE_``/``TOP`` and ``INCLUDES`` lines) rather than guessed from the path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from veriforge.errors import ToolchainNotFoundError

INSTALL_HINT = (
    "Install the CUDA compiler with `pip install 'veriforge[cuda]'` (NVIDIA's nvidia-cuda-nvcc and "
    "nvidia-cuda-runtime wheels, no GPU needed), or install a CUDA toolkit "
    "(https://developer.nvidia.com/cuda-downloads) and put its bin/ on PATH or set CUDA_HOME. "
    "VERIFORGE_NVCC=/path/to/nvcc picks one explicitly."
)

_VERSION = re.compile(r"release (\d+)\.(\d+), V([\d.]+)")
_DRYRUN_VAR = re.compile(r"^#\$ (_HERE_|TOP|INCLUDES|SYSTEM_INCLUDES)=(.*)$")
_QUOTED = re.compile(r'"([^"]+)"')
_WHEEL_LAYOUTS = ("nvidia/cu13", "nvidia/cu12", "nvidia/cuda_nvcc")
#: Conventional install roots tried after PATH (a module attribute so tests can replace it).
DEFAULT_ROOTS: tuple[str, ...] = ("/usr/local/cuda",)


@dataclass(frozen=True)
class Toolchain:
    """One usable CUDA compiler installation.

    ``version`` is nvcc's full version (``"13.0.88"``), part of every cache key, so upgrading
    the compiler never serves stale artefacts. ``source`` says which search step found it.
    """

    nvcc: Path
    ptxas: Path
    cuda_home: Path
    include_dirs: tuple[Path, ...]
    version: str
    release: tuple[int, int]
    source: str
    gpu_codes: tuple[str, ...] = field(default=())

    @property
    def bin_dir(self) -> Path:
        return self.ptxas.parent

    def to_dict(self) -> dict[str, Any]:
        return {
            "nvcc": str(self.nvcc),
            "ptxas": str(self.ptxas),
            "cuda_home": str(self.cuda_home),
            "include_dirs": [str(p) for p in self.include_dirs],
            "version": self.version,
            "release": ".".join(map(str, self.release)),
            "source": self.source,
            "gpu_codes": list(self.gpu_codes),
        }


def _run(cmd: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def parse_nvcc_version(text: str) -> tuple[str, tuple[int, int]]:
    """``Cuda compilation tools, release 13.0, V13.0.88`` → (``"13.0.88"``, (13, 0))."""
    m = _VERSION.search(text)
    if not m:
        raise ToolchainNotFoundError(f"could not read the nvcc version from: {text.strip()[:200]!r}")
    return m.group(3), (int(m.group(1)), int(m.group(2)))


def _candidate_from_root(root: Path) -> Path | None:
    nvcc = root / "bin" / "nvcc"
    return nvcc if nvcc.is_file() else None


def _site_dirs() -> list[Path]:
    dirs = []
    for entry in sys.path:
        if entry and ("site-packages" in entry or "dist-packages" in entry):
            dirs.append(Path(entry))
    return dirs


def wheel_candidates() -> list[Path]:
    """``nvcc`` executables installed by NVIDIA's PyPI wheels in the current interpreter's paths."""
    found: list[Path] = []
    for site in _site_dirs():
        for layout in _WHEEL_LAYOUTS:
            nvcc = site / layout / "bin" / "nvcc"
            if nvcc.is_file() and nvcc not in found:
                found.append(nvcc)
        nvidia = site / "nvidia"
        if nvidia.is_dir():
            for nvcc in sorted(nvidia.glob("*/bin/nvcc")):
                if nvcc not in found:
                    found.append(nvcc)
    return found


def _candidates(nvcc: str | os.PathLike[str] | None) -> list[tuple[str, Path]]:
    """Every place that may hold nvcc, in search order, tagged with how it was found."""
    out: list[tuple[str, Path]] = []

    def add_path(tag: str, value: str | os.PathLike[str]) -> None:
        path = Path(value).expanduser()
        if path.is_dir():
            inner = _candidate_from_root(path)
            out.append((tag, inner if inner is not None else path / "bin" / "nvcc"))
        else:
            out.append((tag, path))

    if nvcc:
        add_path("argument", nvcc)
    if env := os.environ.get("VERIFORGE_NVCC"):
        add_path("VERIFORGE_NVCC", env)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env := os.environ.get(var):
            out.append((var, Path(env).expanduser() / "bin" / "nvcc"))
    if on_path := shutil.which("nvcc"):
        out.append(("PATH", Path(on_path)))
    out.extend((root, Path(root) / "bin" / "nvcc") for root in DEFAULT_ROOTS)
    out.extend(("pip wheel nvidia-cuda-nvcc", p) for p in wheel_candidates())
    return out


def _dryrun_layout(nvcc: Path) -> dict[str, str]:
    """Ask nvcc where it really lives: ``nvcc --dryrun`` prints its profile variables."""
    try:
        proc = _run([str(nvcc), "--dryrun", "-cubin", "veriforge_probe.cu"])
    except (OSError, subprocess.SubprocessError):
        return {}
    found: dict[str, str] = {}
    for line in (proc.stderr + proc.stdout).splitlines():
        m = _DRYRUN_VAR.match(line.strip())
        if m and m.group(1) not in found:
            found[m.group(1)] = m.group(2).strip()
    return found


def _probe(tag: str, nvcc: Path) -> Toolchain:
    """Build a :class:`Toolchain` for one nvcc path, or raise ToolchainNotFoundError saying why not."""
    if not nvcc.is_file():
        raise ToolchainNotFoundError(f"{tag}: {nvcc} does not exist")
    if not os.access(nvcc, os.X_OK):
        raise ToolchainNotFoundError(f"{tag}: {nvcc} is not executable (chmod +x it)")
    try:
        proc = _run([str(nvcc), "--version"])
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainNotFoundError(f"{tag}: {nvcc} --version failed: {exc}") from exc
    if proc.returncode != 0:
        raise ToolchainNotFoundError(f"{tag}: {nvcc} --version failed: {(proc.stderr or proc.stdout)[:300]}")
    try:
        version, release = parse_nvcc_version(proc.stdout)
    except ToolchainNotFoundError as exc:
        raise ToolchainNotFoundError(f"{tag}: {nvcc}: {exc}") from exc

    layout = _dryrun_layout(nvcc)
    here = Path(layout["_HERE_"]) if "_HERE_" in layout else nvcc.resolve().parent
    top = Path(layout["TOP"]).resolve() if "TOP" in layout else here.parent.resolve()
    ptxas = here / "ptxas"
    if not ptxas.is_file():
        ptxas = nvcc.resolve().parent / "ptxas"
    if not ptxas.is_file():
        raise ToolchainNotFoundError(f"{tag}: found {nvcc} but no ptxas next to it ({here})")

    includes: list[Path] = []
    for key in ("INCLUDES", "SYSTEM_INCLUDES"):
        for token in _QUOTED.findall(layout.get(key, "")):
            token = token.removeprefix("-I")
            if token.startswith("-"):
                continue
            path = Path(token).resolve()
            if path.is_dir() and path not in includes:
                includes.append(path)
    # CUDA 12 wheels keep cuda_runtime.h in a sibling package (nvidia/cuda_runtime/include).
    if not any((p / "cuda_runtime.h").is_file() for p in includes):
        for sibling in (top.parent / "cuda_runtime" / "include", top / "include"):
            if (sibling / "cuda_runtime.h").is_file() and sibling.resolve() not in includes:
                includes.append(sibling.resolve())

    try:
        codes = _run([str(nvcc), "--list-gpu-code"]).stdout.split()
    except (OSError, subprocess.SubprocessError):
        codes = []
    return Toolchain(
        nvcc=nvcc,
        ptxas=ptxas,
        cuda_home=top,
        include_dirs=tuple(includes),
        version=version,
        release=release,
        source=tag,
        gpu_codes=tuple(c for c in codes if c.startswith("sm_")),
    )


@lru_cache(maxsize=16)
def _find_cached(nvcc: str | None, *environment: object) -> Toolchain:
    """Memoised search; ``environment`` (env vars, PATH, sys.path, roots) is only the cache key."""
    problems: list[str] = []
    seen: set[Path] = set()
    for tag, candidate in _candidates(nvcc):
        if candidate in seen:
            continue
        seen.add(candidate)
        if not candidate.exists() and (tag == "PATH" or tag in DEFAULT_ROOTS):
            continue
        try:
            return _probe(tag, candidate)
        except ToolchainNotFoundError as exc:
            problems.append(str(exc))
            if tag in ("argument", "VERIFORGE_NVCC"):  # an explicit choice must not silently fall back
                break
    searched = "VERIFORGE_NVCC, CUDA_HOME, CUDA_PATH, PATH, " + ", ".join(DEFAULT_ROOTS) + ", pip wheels"
    detail = ("\n  " + "\n  ".join(problems)) if problems else f" (searched {searched})"
    raise ToolchainNotFoundError(f"nvcc not found{detail}\n{INSTALL_HINT}")


def find_toolchain(nvcc: str | os.PathLike[str] | None = None) -> Toolchain:
    """The CUDA compiler to use (see the module docstring for the search order).

    The result is memoised per environment, so calling it for every compile costs nothing;
    raises :class:`~veriforge.errors.ToolchainNotFoundError` with install instructions.
    """
    env_key = tuple(os.environ.get(v) for v in ("VERIFORGE_NVCC", "CUDA_HOME", "CUDA_PATH"))
    return _find_cached(
        str(nvcc) if nvcc else None, env_key, os.environ.get("PATH", ""), tuple(sys.path), DEFAULT_ROOTS
    )


def describe(nvcc: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """A JSON-able summary for ``veriforge doctor``: found or not, paths, version, how to install."""
    from veriforge.cuda.toolchain.demangle import demangler_status

    try:
        tc = find_toolchain(nvcc)
    except ToolchainNotFoundError as exc:
        return {
            "found": False,
            "error": str(exc).split("\n")[0],
            "install": INSTALL_HINT,
            "demangler": demangler_status(None),
        }
    return {
        "found": True,
        **tc.to_dict(),
        "demangler": demangler_status(str(tc.bin_dir)),
        "problems": installation_problems(tc),
        "install": INSTALL_HINT,
    }


def installation_problems(tc: Toolchain) -> list[str]:
    """Pieces a working-looking install can lack (typical of partial pip installs), as sentences."""
    problems = []
    if not any((d / "cuda_runtime.h").is_file() for d in tc.include_dirs):
        problems.append("cuda_runtime.h not found: `pip install nvidia-cuda-runtime` (or a full CUDA toolkit)")
    if not any((d / "nv" / "target").is_file() for d in tc.include_dirs):
        problems.append(
            "CCCL headers (nv/target) not found: cuda_fp16.h / cuda_bf16.h will not compile; "
            "`pip install nvidia-cuda-cccl`"
        )
    return problems
