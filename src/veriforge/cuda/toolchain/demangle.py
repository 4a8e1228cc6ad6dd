"""Turn C++ mangled kernel names (``_Z12matmul_tiledPKfS0_Pfi``) into what the user wrote.

ptxas reports every function by its mangled name. People (and the CPU runtime, and the
occupancy tables) speak of ``matmul_tiled`` or ``reduce<256>``, so the toolchain demangles once,
in one batch, with the first demangler it finds: the CUDA toolkit's ``cu++filt`` (it knows CUDA
specific manglings), then binutils' ``c++filt``. Without either the names stay mangled and
:func:`demangler_status` says so, instead of failing: resources are still correct, only uglier.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

from veriforge.cuda.source_reader import open_of

Demangler = Callable[[list[str]], dict[str, str]]


def find_demangler(cuda_bin: str | None = None) -> str | None:
    """Path of ``cu++filt`` (in ``cuda_bin`` or on PATH) or ``c++filt``; None when neither exists."""
    return _find_demangler(cuda_bin, os.environ.get("PATH", ""))


@lru_cache(maxsize=16)
def _find_demangler(cuda_bin: str | None, path_env: str) -> str | None:
    if cuda_bin:
        candidate = Path(cuda_bin) / "cu++filt"
        if candidate.is_file():
            return str(candidate)
    return shutil.which("cu++filt", path=path_env) or shutil.which("c++filt", path=path_env)


def demangler_status(cuda_bin: str | None = None) -> str:
    """One line for diagnostics output: which demangler is used, or that names stay mangled."""
    tool = find_demangler(cuda_bin)
    if tool is None:
        return "none found (cu++filt or c++filt): kernel names are reported mangled"
    return tool


@lru_cache(maxsize=4096)
def _demangle_cached(tool: str, names: tuple[str, ...]) -> tuple[str, ...]:
    try:
        proc = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return names
    out = proc.stdout.splitlines()
    if proc.returncode != 0 or len(out) != len(names):
        return names
    return tuple(line.strip() or name for line, name in zip(out, names, strict=True))


def demangle_names(names: Iterable[str], cuda_bin: str | None = None) -> dict[str, str]:
    """Map each mangled name to its demangled form (unchanged when it is not mangled or no tool exists).

    One subprocess for the whole batch; ``extern "C"`` names pass through untouched.
    """
    unique = tuple(sorted(set(names)))
    mangled = tuple(n for n in unique if n.startswith("_Z"))
    result = {n: n for n in unique}
    tool = find_demangler(cuda_bin)
    if not mangled or tool is None:
        return result
    result.update(zip(mangled, _demangle_cached(tool, mangled), strict=True))
    return result


def no_demangle(names: list[str]) -> dict[str, str]:
    """A demangler that leaves every name as it is (for pure parsing and tests)."""
    return {n: n for n in names}


def short_name(demangled: str) -> str:
    """The callable name without return type and parameter list.

    ``void reduce_sum<256, float>(float const*, float*, int)`` → ``reduce_sum<256, float>``;
    ``matmul_tiled(float const*, float*)`` → ``matmul_tiled``; a plain (``extern "C"``) name is
    returned as is.
    """
    text = demangled.strip()
    if not text.endswith(")"):
        return text
    open_at = open_of(text, len(text) - 1)
    if not open_at:  # None, or the whole text is one parenthesis
        return text
    head = text[:open_at].rstrip()
    # Drop a leading return type: the last space at template-bracket depth 0 separates it.
    depth = 0
    cut = -1
    for i, ch in enumerate(head):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == " " and depth == 0:
            cut = i
    return head[cut + 1 :] if cut >= 0 else head


def base_name(demangled: str) -> str:
    """:func:`short_name` without template arguments: ``reduce_sum<256, float>`` → ``reduce_sum``."""
    name = short_name(demangled)
    cut = name.find("<")
    return name[:cut] if cut > 0 else name
