"""Comparing a candidate's output buffer with the reference's, with specific failure messages.

The rule (docs/tasks.md): element i passes when ``|cand - ref| <= atol * scale + rtol * |ref|``
with ``scale = max(|ref|)`` over that output. Scaling ``atol`` by the output's magnitude is what
makes the check *scale-aware*: an absolute tolerance alone lets an all-zero output pass whenever
the reference values are small (KernelBench's softmax/L2-norm loophole), and a relative one alone
fails legitimate rounding near zero. Integer outputs compare exactly unless given a tolerance.
An element that still holds NaN where the reference is finite was never written (the buffers
are poisoned with NaN / 0xAB bytes before the call), and is reported as such. The relative error
reported is ``|cand - ref| / max(|ref|, atol * scale)`` (:func:`rel_floor`): finite and meaningful
where the reference is zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Comparison", "compare", "rel_floor"]

_SHOW = 5


@dataclass
class Comparison:
    """Outcome for one output of one case; ``message`` is empty when it passed."""

    name: str
    passed: bool
    max_abs_error: float | None
    max_rel_error: float | None
    bad: int
    total: int
    message: str = ""


def _fmt(x: object) -> str:
    if isinstance(x, float | np.floating):
        return f"{float(x):.7g}"
    return str(x)


def rel_floor(tol: tuple[float, float] | None, scale: float) -> float:
    """The smallest denominator of the relative error: ``|err| / max(|ref|, floor)``.

    Dividing by ``|ref|`` alone blows up where the reference is (nearly) zero: a passing output
    showed ``max_rel_error 6.3e+262``. The floor is the check's own absolute term, ``atol * scale``
    (an error below it passes whatever ``|ref|`` is), else a float32 epsilon of the output's
    magnitude, else 1 (exact comparisons, all-zero references)."""
    if tol is not None and tol[1] * scale > 0:
        return tol[1] * scale
    if scale > 0:
        return scale * float(np.finfo(np.float32).eps)
    return 1.0


def compare(name: str, got: np.ndarray, ref: np.ndarray, tol: tuple[float, float] | None,
            poison: np.ndarray | None = None) -> Comparison:
    """Compare output ``name``; ``tol`` = (rtol, atol) or None for exact; ``poison`` = the buffer
    as it was handed to the candidate (to recognise unwritten elements of integer outputs)."""
    got = np.asarray(got).reshape(-1)
    ref = np.asarray(ref).reshape(-1)
    total = int(ref.size)
    if got.shape != ref.shape:
        return Comparison(name, False, None, None, total, total,
                          f"output {name!r} has {got.size} elements, the reference {ref.size}")
    if total == 0:
        return Comparison(name, True, 0.0, 0.0, 0, 0)
    floating = ref.dtype.kind == "f" or got.dtype.kind == "f"
    g64 = got.astype(np.float64)
    r64 = ref.astype(np.float64)
    finite_ref = r64[np.isfinite(r64)]
    scale = float(np.max(np.abs(finite_ref))) if finite_ref.size else 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(g64 - r64)
        rel = diff / np.maximum(np.abs(r64), rel_floor(tol, scale))
    ref_nan = np.isnan(r64)
    got_nan = np.isnan(g64)
    unwritten = got_nan & ~ref_nan if floating else np.zeros(total, dtype=bool)
    if poison is not None and not floating and poison.shape == got.shape:
        unwritten = (got == poison.reshape(-1)) & (ref != poison.reshape(-1))
    if tol is None:
        bad = got != ref
    else:
        rtol, atol = tol
        with np.errstate(invalid="ignore"):
            ok = diff <= atol * scale + rtol * np.abs(r64)
        ok |= (got_nan & ref_nan) | (np.isinf(r64) & (g64 == r64))
        bad = ~ok
    nbad = int(np.count_nonzero(bad))
    finite = np.isfinite(diff)
    max_abs = float(np.max(diff[finite])) if finite.any() else None
    finite_rel = np.isfinite(rel)
    max_rel = float(np.max(rel[finite_rel])) if finite_rel.any() else None
    if nbad == 0:
        return Comparison(name, True, max_abs, max_rel, 0, total)
    idx = np.flatnonzero(bad)
    first = ", ".join(str(int(i)) for i in idx[:_SHOW]) + (", ..." if nbad > _SHOW else "")
    nun = int(np.count_nonzero(unwritten))
    if nun == nbad:
        msg = (f"output {name!r}: {nun} of {total} elements were never written (still hold the poison value), "
               f"first at index {first}")
    else:
        scores = np.where(np.isnan(diff), np.inf, diff)
        scores[~bad] = -1.0
        worst = int(np.argmax(scores))
        msg = (f"output {name!r}: {nbad} of {total} elements wrong (indices {first}); worst at index {worst}: "
               f"expected {_fmt(ref[worst])}, got {_fmt(got[worst])}")
        if max_abs is not None:
            msg += f"; max abs error {max_abs:.3g}"
        if max_rel is not None:
            msg += f", max rel error {max_rel:.3g}"
        if nun:
            msg += f"; {nun} element(s) never written"
        if tol is not None:
            msg += f" (tolerance rtol={tol[0]:g}, atol={tol[1]:g} x scale)"
    return Comparison(name, False, max_abs, max_rel, nbad, total, msg)
