"""CPU back-end of the binding: the same source, run by veriforge's CPU CUDA runtime.

Tensors are CPU tensors; ``tensor.numpy()`` is a view of the same memory, and the runtime writes
device-pointer arguments back into the arrays it was given, so a kernel's output lands in the
caller's tensor exactly as it would on a GPU. bfloat16 has no numpy dtype, so those tensors are
passed as an int16 view of their bits (the runtime only checks the element width of 2-byte types).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from veriforge.errors import UnsupportedFeatureError

__all__ = ["CpuBuild", "build_cpu_extension", "record_calls", "to_runtime_args"]

_recording: list[list[tuple[int, int]]] = []


class record_calls:
    """Remember the memory (storage ranges) of every tensor passed to a CUDA host function while
    active: the evaluation harness checks that each output of ``forward`` was handed to the
    candidate's own CUDA code (numbers computed elsewhere — NumPy, plain Python — never were)."""

    def __enter__(self) -> list[tuple[int, int]]:
        self.ranges: list[tuple[int, int]] = []
        _recording.append(self.ranges)
        return self.ranges

    def __exit__(self, *exc: object) -> None:
        if _recording and _recording[-1] is self.ranges:
            _recording.pop()


def _storage_range(t: Any) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


class CpuBuild:
    """A source compiled for the CPU runtime."""

    def __init__(self, module: Any) -> None:
        self.module = module
        if not callable(getattr(module, "call", None)):
            raise UnsupportedFeatureError(
                "this veriforge CPU runtime cannot call host functions (cpu.Module.call is missing); "
                "update veriforge or use the GPU back-end")

    def call(self, function: str, args: Sequence[Any]) -> Any:
        if _recording:
            import torch

            _recording[-1].extend(_storage_range(a) for a in args if isinstance(a, torch.Tensor) and a.numel())
            _recording[-1].append((0, 0))  # a call happened, even with no tensor arguments
        return self.module.call(function, to_runtime_args(args))

    def close(self) -> None:
        close = getattr(self.module, "close", None)
        if callable(close):
            close()


def to_runtime_args(args: Sequence[Any]) -> list[Any]:
    """Checked binding arguments -> CPU-runtime arguments: tensors become numpy views of their memory."""
    import torch

    out: list[Any] = []
    for a in args:
        if isinstance(a, torch.Tensor):
            t = a.detach()
            if t.dtype == torch.bfloat16:
                t = t.view(torch.int16)
            arr = t.numpy()
            out.append(arr.reshape(-1) if arr.ndim != 1 else arr)
        else:
            out.append(a)
    return out


def build_cpu_extension(source: str, *, filename: str = "kernel.cu") -> CpuBuild:
    """Compile ``source`` with the CPU runtime (raises the runtime's CompileError on failure)."""
    from veriforge.cuda import cpu

    return CpuBuild(cpu.compile(source, filename=filename))
