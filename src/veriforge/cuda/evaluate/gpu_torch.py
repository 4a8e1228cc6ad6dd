"""Timing PyTorch→CUDA candidates on a GPU: ``ModelNew`` vs the reference ``Model``, interleaved.

Same rules as the C→CUDA driver (:mod:`.gpu_driver`), in Python: warm-up, CUDA events on the
current stream, the L2 flushed between trials by writing a buffer of twice its size, input sets
cycled, candidate and reference called in a random order every trial, median/IQR, a wall-clock
bracket after ``torch.cuda.synchronize()`` to catch side-stream work, and the speedup over the
reference flagged above 10×.

The timing functions are captured by :func:`guard_timers` *before* the candidate module is
imported in this process, and used through those references: a candidate that monkey-patches
``torch.cuda.Event.elapsed_time`` or ``time.perf_counter`` does not change what is measured, and
the patch itself is reported as a problem (the harness rejects it).
"""

from __future__ import annotations

import random
import time
import types
from typing import Any

from veriforge.core.types import Measurement

from .backend import TorchRequest
from .timing import side_stream_suspect, speedup_review, summarize

__all__ = ["guard_timers", "load_candidate", "time_torch", "timer_patches"]

MAX_INPUT_SETS = 4


def guard_timers() -> dict[str, Any]:
    """References to every function the timing loop relies on, taken now."""
    import torch

    return {
        "Event": torch.cuda.Event,
        "elapsed_time": torch.cuda.Event.elapsed_time,
        "record": torch.cuda.Event.record,
        "event_synchronize": torch.cuda.Event.synchronize,
        "synchronize": torch.cuda.synchronize,
        "perf_counter": time.perf_counter,
    }


def timer_patches(originals: dict[str, Any]) -> list[str]:
    """Sentences naming every timing function that was replaced since :func:`guard_timers`."""
    import torch

    now = {
        "Event": torch.cuda.Event,
        "elapsed_time": torch.cuda.Event.elapsed_time,
        "record": torch.cuda.Event.record,
        "event_synchronize": torch.cuda.Event.synchronize,
        "synchronize": torch.cuda.synchronize,
        "perf_counter": time.perf_counter,
    }
    names = {"Event": "torch.cuda.Event", "elapsed_time": "torch.cuda.Event.elapsed_time",
             "record": "torch.cuda.Event.record", "event_synchronize": "torch.cuda.Event.synchronize",
             "synchronize": "torch.cuda.synchronize", "perf_counter": "time.perf_counter"}
    return [f"the candidate replaced {names[k]} (timer patching)" for k, v in now.items() if v is not originals[k]]


def load_candidate(source: str, name: str = "vf_candidate_timed") -> types.ModuleType:
    """Execute the candidate's module text as a fresh module (it must define ``ModelNew``)."""
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # runs in the isolated child process
    if not hasattr(module, "ModelNew"):
        raise AttributeError("the candidate defines no class ModelNew")
    return module


def _to_device(values: list[Any], device: Any) -> list[Any]:
    import torch

    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def time_torch(request: TorchRequest, originals: dict[str, Any], *, label: str,
               seed: int = 0) -> tuple[list[Measurement], list[str]]:
    """Time ``ModelNew`` against ``Model`` on every configuration; returns (measurements, problems)."""
    import torch

    from veriforge.cuda.tasks.reference import load_torch_reference

    event_cls, elapsed = originals["Event"], originals["elapsed_time"]
    sync, perf = originals["synchronize"], originals["perf_counter"]
    device = torch.device("cuda", torch.cuda.current_device())
    props = torch.cuda.get_device_properties(device)
    l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
    flush = torch.empty(max(2 * l2, 4 * 2**20), dtype=torch.uint8, device=device) if request.timing.flush_l2 else None
    cand = load_candidate(request.candidate_source)
    rng = random.Random(seed)
    measurements: list[Measurement] = []
    problems: list[str] = []
    for cfg in request.configs:
        ref = load_torch_reference(request.reference_source, cfg.overrides, name=f"vf_reference_timed_{cfg.name}")
        init = ref.get_init_inputs()
        torch.manual_seed(cfg.seed)
        model = ref.Model(*init).to(device).eval()
        torch.manual_seed(cfg.seed)
        new = cand.ModelNew(*init).to(device).eval()
        sets = []
        for k in range(max(2, min(request.trials, MAX_INPUT_SETS))):
            torch.manual_seed(cfg.seed * 7919 + 101 + k)
            sets.append(_to_device(list(ref.get_inputs()), device))
        fns = {"candidate": new, "reference": model}
        times: dict[str, dict[str, list[float]]] = {k: {"event": [], "wall": []} for k in fns}
        with torch.no_grad():
            for w in range(max(request.timing.warmup, 0)):
                for fn in fns.values():
                    fn(*sets[w % len(sets)])
            sync()
            start, stop = event_cls(enable_timing=True), event_cls(enable_timing=True)
            for t in range(request.timing.trials):
                order = list(fns)
                rng.shuffle(order)
                inputs = sets[t % len(sets)]
                for key in order:
                    if flush is not None:
                        flush.fill_(t & 0xFF)
                    sync()
                    w0 = perf()
                    start.record()
                    fns[key](*inputs)
                    stop.record()
                    stop.synchronize()
                    sync()
                    w1 = perf()
                    times[key]["event"].append(float(elapsed(start, stop)))
                    times[key]["wall"].append((w1 - w0) * 1e3)
        ev, wall = summarize(times["candidate"]["event"]), summarize(times["candidate"]["wall"])
        base = summarize(times["reference"]["event"])
        speedup, review = speedup_review(ev.median_ms, base.median_ms)
        suspect = side_stream_suspect(ev.median_ms, wall.median_ms)
        if suspect:
            problems.append(f"config {cfg.name!r}: wall time after torch.cuda.synchronize() is {wall.median_ms:.3f} ms "
                            f"but CUDA-event time {ev.median_ms:.3f} ms: the candidate leaves work on a side stream "
                            f"the timer does not wait for")
        measurements.append(Measurement(
            name="time_s", value=ev.median_ms * 1e-3, unit="s", spread=ev.iqr_ms * 1e-3, provenance="measured",
            backend=label, samples=ev.n,
            details={"config": cfg.name, "median_ms": ev.median_ms, "iqr_ms": ev.iqr_ms, "std_ms": ev.std_ms,
                     "min_ms": ev.min_ms, "max_ms": ev.max_ms, "wall_median_ms": wall.median_ms,
                     "side_stream_suspect": suspect, "baseline": "reference Model (PyTorch eager)",
                     "baseline_median_ms": base.median_ms, "baseline_iqr_ms": base.iqr_ms, "speedup": speedup,
                     "review": review, "interleaved": True, "input_sets": len(sets),
                     "warmup": request.timing.warmup, "flush_l2_bytes": 0 if flush is None else flush.numel(),
                     "device": props.name, "timer": "cuda-events"}))
        del model, new, sets
    problems.extend(timer_patches(originals))
    return measurements, problems
