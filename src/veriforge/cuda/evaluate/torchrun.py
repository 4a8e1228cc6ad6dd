"""Running one PyTorch→CUDA case (reference ``Model`` vs candidate ``ModelNew``) on any device.

Shared by the CPU and GPU back-ends so both apply the same dynamic checks. Per case:

* torch is seeded identically (from the configuration seed and the trial) before building
  ``Model`` and before building ``ModelNew``, so parameters match the way KernelBench expects;
  inputs come from ``get_inputs()`` under the next seed and each model gets its own copies.
* The reference runs first on even trials and second on odd ones; its outputs stay alive until
  the candidate has finished, and a NaN-filled block of the output's size is allocated and
  freed just before the candidate runs, so memory recycled by the allocator holds poison, not
  the answer. An output that overlaps the reference's output memory is refused.
* Every output must be a plain ``torch.Tensor`` (no subclass, no meta/lazy tensor) on the
  expected device, with the reference's dtype unless the task allows others.
* torch functions and timers the harness relies on are fingerprinted before the candidate is
  imported and checked after it ran: a candidate that patched them is refused.
"""

from __future__ import annotations

import time
import types
from dataclasses import dataclass
from typing import Any

from .backend import BackendRun, CaseOutput, TorchConfig, TorchRequest

__all__ = ["TorchCase", "load_candidate", "prepare_case", "run_case", "run_torch_request", "trial_seed"]


def trial_seed(config_seed: int, trial: int) -> int:
    return (int(config_seed) * 1_000_003 + int(trial) * 7919 + 12345) % (2**31 - 1)


def load_candidate(source: str, name: str = "vf_candidate") -> types.ModuleType:
    """Import candidate text as a fresh module (never via the import system's cache)."""
    import sys

    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    if not hasattr(module, "ModelNew"):
        raise AttributeError("the candidate defines no class ModelNew")
    return module


@dataclass
class TorchCase:
    """A prepared case: both models, and one copy of the inputs for each."""

    config: TorchConfig
    trial: int
    model: Any
    model_new: Any
    inputs_ref: list[Any]
    inputs_new: list[Any]
    device: str


def _to(value: Any, device: str) -> Any:
    import torch

    return value.to(device) if isinstance(value, torch.Tensor) else value


def _clone(value: Any) -> Any:
    import torch

    return value.clone() if isinstance(value, torch.Tensor) else value


def prepare_case(reference: types.ModuleType, candidate: types.ModuleType, config: TorchConfig, trial: int,
                 device: str) -> TorchCase:
    """Build Model and ModelNew with the same seed and draw the inputs of ``trial``."""
    import torch

    seed = trial_seed(config.seed, trial)
    torch.manual_seed(seed)
    init = list(reference.get_init_inputs())
    torch.manual_seed(seed)
    model = reference.Model(*init).to(device).eval()
    torch.manual_seed(seed)
    model_new = candidate.ModelNew(*init).to(device).eval()
    torch.manual_seed(seed + 1)
    inputs = [_to(v, device) for v in reference.get_inputs()]
    return TorchCase(config, trial, model, model_new, [_clone(v) for v in inputs], [_clone(v) for v in inputs],
                     device)


def _outputs(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return list(value)
    return [value]


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _ranges_overlap(a: Any, b: Any) -> bool:
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1 = a0 + a.untyped_storage().nbytes()
    b1 = b0 + b.untyped_storage().nbytes()
    return a0 < b1 and b0 < a1


def _fingerprint() -> dict[str, int]:
    import torch

    names = {"torch.matmul": torch.matmul, "torch.Tensor.__matmul__": torch.Tensor.__matmul__,
             "torch.allclose": torch.allclose, "torch.Tensor.clone": torch.Tensor.clone,
             "torch.manual_seed": torch.manual_seed, "time.perf_counter": time.perf_counter,
             "torch.cuda.synchronize": torch.cuda.synchronize, "torch.Tensor.to": torch.Tensor.to,
             "torch.Tensor.cpu": torch.Tensor.cpu, "torch.Tensor.numpy": torch.Tensor.numpy}
    try:
        names["torch.cuda.Event.elapsed_time"] = torch.cuda.Event.elapsed_time
    except AttributeError:  # pragma: no cover - torch without CUDA support
        pass
    return {k: id(v) for k, v in names.items()}


def run_case(case: TorchCase, allowed_dtypes: tuple[str, ...] | list[str]) -> CaseOutput:
    """Run both models on their inputs, apply the dynamic checks, return host copies."""
    import torch

    out = CaseOutput(config=case.config.name, trial=case.trial)

    def run_ref() -> list[Any]:
        with torch.no_grad():
            res = _outputs(case.model(*case.inputs_ref))
        _sync(case.device)
        return res

    ref_first = case.trial % 2 == 0
    ref = run_ref() if ref_first else None
    if ref is not None:
        for r in ref:
            if isinstance(r, torch.Tensor) and r.numel():
                junk = torch.full_like(r, float("nan")) if r.is_floating_point() else torch.full_like(r, -7)
                del junk  # the allocator now hands out poison, not the reference's numbers
    start = time.perf_counter()
    with torch.no_grad():
        got = _outputs(case.model_new(*case.inputs_new))
    _sync(case.device)
    out.seconds = time.perf_counter() - start
    if ref is None:
        ref = run_ref()
    for i, (r, g) in enumerate(zip(ref, got, strict=False)):
        name = f"out{i}"
        if not isinstance(g, torch.Tensor):
            out.problems.append(f"output {i} is a {type(g).__name__}, not a torch.Tensor")
            continue
        if type(g) is not torch.Tensor and type(g) is not torch.nn.Parameter:
            out.problems.append(f"output {i} is a {type(g).__name__} (a Tensor subclass): lazy or subclassed "
                                f"outputs are not allowed")
            continue
        if g.is_meta or g.device.type != torch.device(case.device).type:
            out.problems.append(f"output {i} lives on {g.device}, expected {case.device}")
            continue
        if isinstance(r, torch.Tensor):
            if _ranges_overlap(g, r):
                out.problems.append(f"output {i} reuses the reference's output memory")
                continue
            if g.dtype != r.dtype and str(g.dtype).removeprefix("torch.") not in allowed_dtypes:
                out.problems.append(f"output {i} has dtype {g.dtype}, the reference {r.dtype}: precision changes "
                                    f"are not allowed by this task")
                continue
            if tuple(g.shape) != tuple(r.shape):
                out.outputs[name] = _host(g)
                out.reference[name] = _host(r)
                out.problems.append(f"output {i} has shape {tuple(g.shape)}, the reference {tuple(r.shape)}")
                continue
            out.reference[name] = _host(r)
        out.outputs[name] = _host(g)
    if len(got) != len(ref):
        out.problems.append(f"the candidate returned {len(got)} output(s), the reference {len(ref)}")
    return out


def _host(t: Any) -> Any:
    import torch

    t = t.detach()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    return t.cpu().contiguous().numpy().copy()


def run_torch_request(request: TorchRequest, device: str, label: str) -> BackendRun:
    """Every configuration and trial of ``request`` on ``device`` (used by back-ends in their worker)."""

    from veriforge.cuda.tasks.reference import load_torch_reference

    before = _fingerprint()
    try:
        candidate = load_candidate(request.candidate_source)
    except Exception as exc:
        return BackendRun(status="compile_error", message=f"the candidate failed to load: {type(exc).__name__}: {exc}")
    run = BackendRun(status="ok")
    trials = list(request.trial_numbers) or list(range(request.trials))
    for config in request.configs:
        reference = load_torch_reference(request.reference_source, config.overrides, name=f"vf_ref_{config.name}")
        for t in trials:
            try:
                case = prepare_case(reference, candidate, config, t, device)
                out = run_case(case, request.allowed_dtypes)
            except Exception as exc:
                run.status = "error"
                run.failed_case = f"{config.name}/{t}"
                run.message = f"config {config.name!r} (trial {t}): {type(exc).__name__}: {exc}"
                return run
            run.cases.append(out)
    after = _fingerprint()
    patched = sorted(k for k in before if before[k] != after.get(k))
    if patched:
        for c in run.cases:
            c.problems.append(f"the candidate replaced {', '.join(patched)} (monkey-patching is not allowed)")
    run.measurements.extend(forward_times(run.cases, device, label,
                                          "wall time of ModelNew.forward (not timed with CUDA events)"))
    return run


def forward_times(cases: list[CaseOutput], device: str, label: str, note: str) -> list[Any]:
    """One ``time_s`` measurement per configuration: the median forward time of its cases
    (``emulated`` on the CPU, ``measured`` on a GPU)."""
    import statistics

    from veriforge.core.types import Measurement

    by_config: dict[str, list[float]] = {}
    for c in cases:
        if c.seconds is not None:
            by_config.setdefault(c.config, []).append(c.seconds)
    provenance = "emulated" if device == "cpu" else "measured"
    return [Measurement(name="time_s", value=statistics.median(secs), unit="s", provenance=provenance, backend=label,
                        samples=len(secs), details={"config": config, "note": note})
            for config, secs in by_config.items()]
