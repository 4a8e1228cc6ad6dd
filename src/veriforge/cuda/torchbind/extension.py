"""``load_cuda``: one CUDA source, callable from PyTorch on the CPU runtime or on a GPU.

PyTorch→CUDA candidates must be checkable on a laptop and measurable on a GPU *without being
edited* between the two. So candidates never talk to a loader directly: they hand their source to
:func:`load_cuda`, which reads the ``extern "C"`` signatures once and exposes each function as a
checked Python callable, backed by the CPU runtime or by a PyTorch extension build.

Extensions are cached per process by ``(name, backend, source hash, flags)``: a candidate module
imported many times (one import per evaluation trial) compiles once.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from veriforge.errors import ConfigError

from .args import BindingTypeError, bind_arguments
from .signature import BindingSignatureError, CFunction, parse_extern_c

__all__ = ["BoundFunction", "Extension", "clear_cache", "load_cuda", "resolve_backend"]

Backend = Literal["cpu", "gpu"]


def resolve_backend(backend: str | None) -> Backend:
    """``None`` → ``"gpu"`` when ``torch.cuda.is_available()`` else ``"cpu"``; validates explicit names."""
    if backend is None:
        import torch

        return "gpu" if torch.cuda.is_available() else "cpu"
    if backend not in ("cpu", "gpu"):
        raise ConfigError(f"backend must be None, 'cpu' or 'gpu', not {backend!r}")
    return backend  # type: ignore[return-value]


class BoundFunction:
    """One ``extern "C"`` function as a Python callable: ``fn(*tensors_and_scalars)``."""

    def __init__(self, extension: Extension, function: CFunction) -> None:
        self._extension = extension
        self.function = function
        self.__name__ = function.name
        self.__doc__ = f"{function.signature}  [veriforge.cuda.torchbind, {extension.backend} back-end]"

    @property
    def signature(self) -> str:
        return self.function.signature

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        fn = self.function
        if fn.problem:
            raise BindingSignatureError(fn.problem)
        ext = self._extension
        values = bind_arguments(fn, args, kwargs, "cuda" if ext.backend == "gpu" else "cpu")
        ext._invoke(fn, values)

    def __repr__(self) -> str:
        return f"<bound extern \"C\" {self.function.signature} ({self._extension.backend})>"


class Extension:
    """The ``extern "C"`` functions of one CUDA source, callable from Python.

    Access functions as attributes (``ext.relu(x, y, n)``) or by name (``ext["relu"]``, which also
    works for a function whose name collides with an attribute of this class).
    """

    def __init__(self, name: str, source: str, backend: Backend, functions: Mapping[str, CFunction],
                 build: Any) -> None:
        self.name = name
        self.source = source
        self.backend = backend
        self.functions: dict[str, CFunction] = dict(functions)
        self._build = build
        self._bound = {n: BoundFunction(self, f) for n, f in self.functions.items()}
        self._gpu_fns: dict[str, Any] = {}
        if backend == "gpu":
            self._gpu_fns = {n: getattr(build.module, n) for n, f in self.functions.items() if not f.problem}

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    def _invoke(self, fn: CFunction, values: Sequence[Any]) -> None:
        if self.backend == "gpu":
            from veriforge.errors import LaunchError

            try:
                self._gpu_fns[fn.name](*values)
            except RuntimeError as exc:
                raise LaunchError(f"{fn.name}(): {exc}") from exc
            return
        self._build.call(fn.name, values)

    def __getattr__(self, name: str) -> BoundFunction:
        bound = self.__dict__.get("_bound", {})
        if name in bound:
            return bound[name]
        available = ", ".join(sorted(bound)) or "none"
        raise AttributeError(f"extension '{self.__dict__.get('name', '?')}' has no extern \"C\" function "
                             f"'{name}' (it has: {available})")

    def __getitem__(self, name: str) -> BoundFunction:
        try:
            return self._bound[name]
        except KeyError:
            have = ", ".join(sorted(self._bound))
            raise KeyError(f"no extern \"C\" function '{name}' (have: {have})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._bound)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._bound))

    def close(self) -> None:
        """Release the CPU runtime's kernel server (no-op on the GPU back-end)."""
        close = getattr(self._build, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        return f"<veriforge Extension '{self.name}' ({self.backend}): {', '.join(self._bound)}>"


_CACHE: dict[tuple, Extension] = {}
_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget every extension built in this process (CPU kernel servers are closed)."""
    with _LOCK:
        for ext in _CACHE.values():
            ext.close()
        _CACHE.clear()


def load_cuda(name: str, source: str, *, backend: str | None = None, extra_cuda_cflags: Sequence[str] = (),
              verbose: bool = False) -> Extension:
    """Compile ``source`` and expose every ``extern "C"`` function in it as a Python callable.

    Pointer parameters take contiguous tensors of the matching dtype on the back-end's device;
    integer/float/bool parameters take Python numbers, converted to the exact C type of the
    signature. ``backend=None`` picks ``"gpu"`` when CUDA is available, else ``"cpu"`` (the
    veriforge CPU runtime). ``extra_cuda_cflags`` are passed to nvcc on the GPU back-end only.
    Raises ``CompileError`` when the source does not build, ``BindingSignatureError`` when it has
    no callable ``extern "C"`` function.
    """
    if not isinstance(name, str) or not name.strip():
        raise BindingTypeError(f"load_cuda(): name must be a non-empty string, got {name!r}")
    if not isinstance(source, str):
        raise BindingTypeError(f"load_cuda(): source must be a string, got {type(source).__name__}")
    chosen = resolve_backend(backend)
    flags = tuple(str(f) for f in extra_cuda_cflags)
    key = (name, chosen, hashlib.sha256(source.encode()).hexdigest(), flags)
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        functions = parse_extern_c(source)
        callable_fns = [f for f in functions.values() if not f.problem]
        if not callable_fns:
            problems = "; ".join(f.problem for f in functions.values())
            raise BindingSignatureError(
                f"load_cuda('{name}'): the source defines no callable extern \"C\" function"
                + (f" ({problems})" if problems else " (declare host launchers as extern \"C\" void f(...))"))
        if chosen == "gpu":
            from .gpu_backend import build_gpu_extension

            build: Any = build_gpu_extension(name, source, callable_fns, extra_cuda_cflags=flags,
                                             verbose=verbose)
        else:
            from .cpu_backend import build_cpu_extension

            build = build_cpu_extension(source, filename=_filename(name))
        ext = Extension(name, source, chosen, functions, build)
        _CACHE[key] = ext
        return ext


def _filename(name: str) -> str:
    import re

    return (re.sub(r"[^\w.+-]", "_", name) or "ext") + ".cu"
