"""Running references: reference.c (C→CUDA) and reference.py (PyTorch→CUDA).

reference.c is compiled once with the system C compiler (``cc -O2 -shared``) into a library
cached by content hash under ``cache_dir("c-ref")`` and called through ctypes with numpy arrays,
which is thousands of times faster than running serial code through any emulator. Reference
*outputs* are cached too (``cache_dir("c-ref-out")``, keyed by the task's content hash, the
configuration and the trial) because validate and search evaluate many candidates against the
same inputs. reference.c is the task author's code and runs in the calling process.

Both caches are private folders (0700) and every entry carries a ``<file>.sig`` signature (HMAC with
the installation's secret key over the cache key and the file's SHA-256, see
:mod:`veriforge.core.integrity`). A hit is used only if its signature verifies; a missing or bad
signature, or a changed file, means the library is rebuilt / the outputs recomputed and the entry
atomically replaced. Outputs are checked on the very bytes that are then loaded.

reference.py is imported as a fresh module with its module-level constants overridden by the
configuration (KernelBench files read e.g. ``batch_size`` inside ``get_inputs()`` at call time,
so overriding the attribute after import is enough).
"""

from __future__ import annotations

import ctypes
import hashlib
import io
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import types
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from veriforge.core import integrity
from veriforge.core.paths import cache_dir
from veriforge.errors import CompileError, ToolchainNotFoundError

from .generate import Case
from .schema import TaskFormatError, TaskSpec

__all__ = ["ReferenceError", "compile_c_reference", "load_torch_reference", "reference_outputs", "run_c_reference",
           "run_cuda_program", "run_cuda_reference", "run_numpy_reference", "task_content_hash"]

_CTYPES = {"float32": ctypes.c_float, "float64": ctypes.c_double, "int32": ctypes.c_int32,
           "uint32": ctypes.c_uint32, "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "uint8": ctypes.c_uint8,
           "int8": ctypes.c_int8, "int16": ctypes.c_int16, "uint16": ctypes.c_uint16, "bool": ctypes.c_bool}
_lock = threading.Lock()
_libs: dict[str, ctypes.CDLL] = {}
_source_locks: dict[str, threading.Lock] = {}
_log = logging.getLogger(__name__)


class ReferenceError(TaskFormatError):
    """The task's reference cannot be built or run. ``status`` is the back-end's run status when a
    CUDA reference ran (``"timeout"``, ``"crash"``, ...), else ``""``."""

    status: str = ""


def _c_compiler() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return str(shutil.which(name))
    raise ToolchainNotFoundError("no C compiler (cc, gcc or clang) on PATH: needed to run reference.c")


def compile_c_reference(source: str, name: str = "reference.c") -> Path:
    """Build ``source`` into a shared library (cached by content hash); returns its path."""
    cc = _c_compiler()
    flags = ["-O2", "-std=gnu11", "-fPIC", "-shared"]
    key = hashlib.sha256("\0".join([cc, *flags, source]).encode()).hexdigest()[:32]
    out = cache_dir("c-ref", private=True) / f"{key}.so"
    if out.exists():
        if integrity.verify_file(out, "c-ref", key):
            return out
        _log.warning("cached reference library %s has no valid signature; rebuilding it", out)
    with tempfile.TemporaryDirectory(prefix="vf-cref-") as tmp:
        src = Path(tmp) / name
        src.write_text(source)
        tmp_out = Path(tmp) / "lib.so"
        proc = subprocess.run([cc, *flags, "-o", str(tmp_out), str(src), "-lm"], capture_output=True, text=True,
                              timeout=120)
        if proc.returncode != 0:
            raise CompileError(f"{name} does not compile:\n{proc.stderr.strip()}", [], proc.stderr)
        partial = out.with_name(f"{out.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        shutil.copyfile(tmp_out, partial)
        integrity.sign_file(partial, "c-ref", key)
        # signature first: a concurrent reader that finds the file always finds its signature
        os.replace(integrity.signature_path(partial), integrity.signature_path(out))
        os.replace(partial, out)
    return out


def _library(spec: TaskSpec) -> ctypes.CDLL:
    assert spec.folder is not None
    source = (spec.folder / "reference.c").read_text()
    digest = hashlib.sha256(source.encode()).hexdigest()
    with _lock:  # one lock per reference: different tasks compile in parallel, one task compiles once
        lock = _source_locks.setdefault(digest, threading.Lock())
    with lock:
        path = str(compile_c_reference(source))
        with _lock:
            if path not in _libs:
                _libs[path] = ctypes.CDLL(path)
            return _libs[path]


def run_c_reference(spec: TaskSpec, case: Case) -> dict[str, np.ndarray]:
    """Call ``reference(...)`` on copies of ``case``'s arguments; returns every output by name.

    A task folder with ``reference.cu`` instead (a user's original kernel, ``veriforge optimize
    --kernel``) runs that CUDA source's entry on the CPU runtime (:func:`run_cuda_reference`); one with
    ``reference_numpy.py`` calls its NumPy function (:func:`run_numpy_reference`).
    """
    assert spec.folder is not None
    if not (spec.folder / "reference.c").is_file():
        if (spec.folder / "reference.cu").is_file():
            return run_cuda_reference(spec, case)
        if (spec.folder / "reference_numpy.py").is_file():
            return run_numpy_reference(spec, case)
    lib = _library(spec)
    try:
        fn = lib.reference
    except AttributeError:
        raise ReferenceError(f"task {spec.id}: reference.c defines no function `reference`") from None
    fn.restype = None
    cargs: list[Any] = []
    copies: dict[str, np.ndarray] = {}
    for p, value in zip(spec.params, case.args, strict=True):
        if p.role == "scalar":
            cargs.append(_CTYPES[p.dtype](value))
        else:
            arr = np.array(value, copy=True)
            if p.role == "out":
                arr[...] = 0  # the reference is trusted to write every element; start it clean
            copies[p.name] = arr
            cargs.append(arr.ctypes.data_as(ctypes.c_void_p))
    fn.argtypes = [ctypes.c_void_p if p.role != "scalar" else _CTYPES[p.dtype] for p in spec.params]
    fn(*cargs)
    return {p.name: copies[p.name] for p in spec.params if p.is_output}


def run_cuda_reference(spec: TaskSpec, case: Case) -> dict[str, np.ndarray]:
    """Run ``reference.cu``'s entry (the original kernel and its launch) on ``case`` through the CPU
    runtime, or the GPU back-end when ``reference.backend`` says ``gpu``; outputs by name. A failure
    (compile error, crash, time limit) raises :class:`ReferenceError` with the back-end's message."""
    assert spec.folder is not None
    which = spec.folder / "reference.backend"
    backend = which.read_text().strip() if which.is_file() else "cpu"
    return run_cuda_program(spec, (spec.folder / "reference.cu").read_text(), case, backend=backend)


def run_cuda_program(spec: TaskSpec, source: str, case: Case, *, backend: str = "cpu",
                     timeout_s: float = 300.0) -> dict[str, np.ndarray]:
    """Run ``source``'s task entry on ``case`` through ``backend`` (``reference.cu`` of a user task, or the
    original kernel when OptiML times it to size the emulated configurations); outputs by name. A failure
    (compile error, crash, ``timeout_s`` passed) raises :class:`ReferenceError` with the back-end's message."""
    from veriforge.cuda.evaluate.backend import CCase, CParam, CRequest, TimingOptions, get_backend

    be = get_backend(backend)
    request = CRequest(task_id=spec.id, source=source, entry=spec.entry,
                       params=[CParam(p.name, p.type, p.role) for p in spec.params],
                       cases=[CCase(config=case.config, trial=case.trial, args=list(case.args),
                                    variables=dict(case.env))],
                       timeout_s=timeout_s, timing=TimingOptions(enabled=False, warmup=0, trials=0),
                       filename="reference.cu", race_check=False)
    if be.isolates("c2cuda"):
        run = be.run_c(request)
    else:
        from veriforge.cuda.evaluate.isolation import run_isolated

        run = run_isolated(be.name, "run_c", request, request.timeout_s)
    if not run.ok or not run.cases:
        err = ReferenceError(f"the original kernel fails on config {case.config!r}: {run.status}: "
                             f"{(run.message or 'no output').strip()[:500]}")
        err.status = run.status
        raise err
    outs = run.cases[0].outputs
    return {p.name: np.asarray(outs[p.name]) for p in spec.params if p.is_output}


_TORCH_IMPORT = re.compile(r"^\s*(?:import\s+torch\b|from\s+torch\b)", re.M)


def run_numpy_reference(spec: TaskSpec, case: Case) -> dict[str, np.ndarray]:
    """Call ``reference_numpy.py``'s ``__veriforge_reference__`` with copies of the arrays and the
    scalars (numpy values, signature order; a module that imports ``torch`` gets CPU tensors sharing the
    copies' memory and Python scalars). It returns the outputs (one array, a tuple in the order of
    the out/inout params, or a dict by name) or ``None`` after mutating the in/out arrays."""
    assert spec.folder is not None
    module = types.ModuleType("vf_numpy_reference")
    source = (spec.folder / "reference_numpy.py").read_text()
    exec(compile(source, str(spec.folder / "reference_numpy.py"), "exec"), module.__dict__)
    fn = module.__dict__.get("__veriforge_reference__")
    if not callable(fn):
        raise ReferenceError(f"task {spec.id}: reference_numpy.py names no function")
    # A PyTorch function (its module imports torch) gets CPU tensors that share memory with the copies,
    # so in-place writes land in them as with NumPy arrays; tensors it returns are read back.
    torch = None
    if _TORCH_IMPORT.search(source):
        import torch
    args: list[Any] = []
    copies: dict[str, np.ndarray] = {}
    for p, value in zip(spec.params, case.args, strict=True):
        if p.role == "scalar":
            args.append(np.dtype(p.dtype).type(value).item() if torch is not None else np.dtype(p.dtype).type(value))
        else:
            arr = np.array(value, copy=True)
            copies[p.name] = arr
            args.append(torch.from_numpy(arr) if torch is not None else arr)
    outputs = [p for p in spec.params if p.is_output]
    got = fn(*args)
    if torch is not None:
        def as_numpy(v: Any) -> Any:
            return v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v

        got = ({k: as_numpy(v) for k, v in got.items()} if isinstance(got, dict)
               else type(got)(as_numpy(v) for v in got) if isinstance(got, tuple | list) else as_numpy(got))
    if got is None:
        return {p.name: copies[p.name] for p in outputs}
    if isinstance(got, dict):
        values = [got.get(p.name) for p in outputs]
    elif isinstance(got, tuple | list):
        values = list(got)
    else:
        values = [got]
    if len(values) != len(outputs) or any(v is None for v in values):
        raise ReferenceError(f"the NumPy reference returned {len(values)} output(s); the kernel has "
                             f"{len(outputs)} ({', '.join(p.name for p in outputs)})")
    result = {}
    for p, v in zip(outputs, values, strict=True):
        arr = np.ascontiguousarray(np.asarray(v, dtype=p.dtype).reshape(-1))
        if arr.size != copies[p.name].size:
            raise ReferenceError(f"the NumPy reference's output {p.name} has {arr.size} elements, "
                                 f"the buffer {copies[p.name].size}")
        result[p.name] = arr
    return result


def task_content_hash(spec: TaskSpec) -> str:
    """Hash of every file of the task folder that can change results (not the implementations)."""
    assert spec.folder is not None
    h = hashlib.sha256()
    for name in ("task.toml", "reference.c", "reference.py", "inputs.py", "reference.cu", "reference.backend",
                 "reference_numpy.py"):
        path = spec.folder / name
        if path.is_file():
            h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def reference_outputs(spec: TaskSpec, case: Case, *, version: str = "1", cache: bool = True) -> dict[str, np.ndarray]:
    """:func:`run_c_reference` with an on-disk cache keyed by task content, config and trial
    (``cache=False`` for one-off inputs, e.g. the secret trials of an evaluation)."""
    if not cache:
        return run_c_reference(spec, case)
    key = hashlib.sha256(f"{task_content_hash(spec)}\0{case.config}\0{case.trial}\0{version}".encode()).hexdigest()
    path = cache_dir("c-ref-out", private=True) / f"{key[:40]}.npz"
    data = integrity.read_verified(path, "c-ref-out", key)
    if data is not None:
        try:
            with np.load(io.BytesIO(data)) as npz:  # the verified bytes themselves, never re-read
                return {k: npz[k] for k in npz.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            pass
    elif path.exists():
        _log.warning("cached reference outputs %s have no valid signature; recomputing them", path)
    outputs = run_c_reference(spec, case)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp.npz")
    np.savez(tmp, **outputs)
    integrity.sign_file(tmp, "c-ref-out", key)
    # signature first: a concurrent reader that finds the file always finds its signature (two
    # replaces in the other order let evaluations running in parallel see data without it)
    os.replace(integrity.signature_path(tmp), integrity.signature_path(path))
    os.replace(tmp, path)
    return outputs


def load_torch_reference(source: str, overrides: Mapping[str, Any] | None = None,
                         name: str = "vf_reference") -> types.ModuleType:
    """Import reference.py text as a new module and override its module-level constants."""
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    for key, value in (overrides or {}).items():
        if key not in module.__dict__:
            raise ReferenceError(f"config overrides {key!r}, which reference.py does not define at module level")
        setattr(module, key, value)
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise ReferenceError(f"reference.py defines no {attr} (KernelBench format needs Model, get_inputs, "
                                 f"get_init_inputs)")
    return module
