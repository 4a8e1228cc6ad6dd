"""Check Python arguments against a C signature before anything reaches native code.

A wrong dtype or a non-contiguous view passed as a raw pointer does not crash: it silently reads
the wrong bytes, and a verifier would then blame the kernel. So every call is checked here, with
the same rules and messages on both back-ends (a candidate that fails on the CPU fails the same
way on a GPU): tensors for pointers (dtype, contiguity, device), exact-width range checks for
integer scalars, no bools where numbers are meant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from veriforge.errors import LaunchError

from .signature import CFunction, CParam

__all__ = ["BindingTypeError", "BindingValueError", "bind_arguments", "check_scalar", "check_tensor"]


class BindingTypeError(LaunchError, TypeError):
    """An argument has the wrong kind or dtype, or the call has the wrong number of arguments."""


class BindingValueError(LaunchError, ValueError):
    """An argument has the right kind but an unusable value (non-contiguous, wrong device, out of range)."""


def _int_range(p: CParam) -> tuple[int, int]:
    bits = p.bits
    if p.kind == "uint":
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def check_scalar(fn: CFunction, index: int, p: CParam, value: Any) -> int | float | bool:
    """Convert one Python value to what the C scalar parameter ``p`` holds, or raise."""
    where = f"{fn.name}(): argument {index} '{p.name}' ({p.ctype})"
    if _is_tensor(value):
        raise BindingTypeError(f"{where} is a scalar; got a tensor (pass a Python number, e.g. x.numel() or "
                               f"float(t) if you really mean a 0-d tensor's value)")
    if hasattr(value, "item") and hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0:
        value = value.item()  # numpy scalars
    if p.kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise BindingTypeError(f"{where} expects a bool, got {value!r}")
    if isinstance(value, bool):
        raise BindingTypeError(f"{where} expects a number, got the bool {value!r}")
    if p.kind in ("int", "uint"):
        if not isinstance(value, int):
            raise BindingTypeError(f"{where} expects an int, got {type(value).__name__} {value!r}")
        lo, hi = _int_range(p)
        if not lo <= value <= hi:
            raise BindingValueError(f"{where}: {value} is out of range [{lo}, {hi}]")
        return value
    if p.kind == "float":
        if not isinstance(value, (int, float)):
            raise BindingTypeError(f"{where} expects a float, got {type(value).__name__} {value!r}")
        result = float(value)
        if p.dtype == "float32" and math.isfinite(result) and abs(result) > 3.4028234663852886e38:
            raise BindingValueError(f"{where}: {value!r} overflows float")
        return result
    raise BindingTypeError(f"{where}: scalar parameters of this type cannot be passed")


def _is_tensor(value: Any) -> bool:
    cls = type(value)
    return cls.__module__.startswith("torch") and hasattr(value, "data_ptr") and hasattr(value, "dtype")


def check_tensor(fn: CFunction, index: int, p: CParam, value: Any, device_type: str) -> None:
    """Raise unless ``value`` can be passed as the pointer parameter ``p`` on ``device_type``."""
    import torch

    where = f"{fn.name}(): argument {index} '{p.name}' ({p.ctype})"
    if not isinstance(value, torch.Tensor):
        raise BindingTypeError(f"{where} is a pointer: pass a torch.Tensor, got {type(value).__name__}")
    if type(value) is not torch.Tensor and not isinstance(value, torch.nn.Parameter):
        raise BindingTypeError(f"{where}: got a tensor subclass {type(value).__name__}; "
                               f"pass a plain torch.Tensor")
    if p.dtype and str(value.dtype).removeprefix("torch.") != p.dtype:
        raise BindingTypeError(f"{where} needs torch.{p.dtype}, got {value.dtype}")
    if value.layout != torch.strided:
        raise BindingValueError(f"{where}: got a {value.layout} tensor; only dense (strided) tensors "
                                f"are passed")
    if not value.is_contiguous():
        raise BindingValueError(f"{where} is not contiguous (shape {tuple(value.shape)}, strides "
                                f"{tuple(value.stride())}); call .contiguous() first")
    if value.device.type != device_type:
        where_to = "the GPU (tensor.cuda())" if device_type == "cuda" else "the CPU (tensor.cpu())"
        raise BindingValueError(f"{where} is on {value.device}, but this extension runs on {where_to}")
    if value.is_meta:
        raise BindingValueError(f"{where} is a meta tensor (it has no memory)")


def bind_arguments(fn: CFunction, args: Sequence[Any], kwargs: Mapping[str, Any],
                   device_type: str) -> list[Any]:
    """Match positional/keyword arguments to ``fn``'s parameters and check each one.

    Returns the argument list in signature order: tensors (or ``None`` for a null pointer) for
    pointers and converted Python scalars for the rest.
    """
    n = len(fn.params)
    if len(args) > n:
        raise BindingTypeError(f"{fn.name}() takes {n} argument(s) ({_plist(fn)}), "
                               f"got {len(args) + len(kwargs)}")
    values: list[Any] = list(args) + [_MISSING] * (n - len(args))
    names = {p.name: i for i, p in enumerate(fn.params)}
    for key, value in kwargs.items():
        if key not in names:
            raise BindingTypeError(f"{fn.name}() has no parameter '{key}' ({_plist(fn)})")
        if values[names[key]] is not _MISSING:
            raise BindingTypeError(f"{fn.name}() got several values for '{key}'")
        values[names[key]] = value
    missing = [fn.params[i].name for i, v in enumerate(values) if v is _MISSING]
    if missing:
        raise BindingTypeError(f"{fn.name}() takes {n} argument(s) ({_plist(fn)}), got {n - len(missing)}; "
                               f"missing: {', '.join(missing)}")
    out: list[Any] = []
    device = None
    for i, (p, v) in enumerate(zip(fn.params, values, strict=True)):
        if p.pointer:
            if v is None:
                out.append(None)
                continue
            check_tensor(fn, i, p, v, device_type)
            if device is None:
                device = v.device
            elif v.device != device:
                raise BindingValueError(f"{fn.name}(): argument {i} '{p.name}' is on {v.device} but an "
                                        f"earlier tensor is on {device}; all tensors must be on one device")
            out.append(v)
        else:
            out.append(check_scalar(fn, i, p, v))
    return out


def _plist(fn: CFunction) -> str:
    return ", ".join(p.describe() for p in fn.params)


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
