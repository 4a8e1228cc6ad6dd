"""The contract between the evaluation harness and an execution back-end (CPU runtime or GPU).

Why the split: everything that decides *whether a candidate is correct* (input generation,
poisoning, tolerances, the "outputs must depend on inputs" check, static anti-cheat, caching)
lives once in the harness, so a GPU and a CPU evaluation can never disagree about the rules.
A back-end only *executes*: it compiles the candidate, runs it on the argument lists the
harness prepared, hands back the final contents of the output buffers, and adds what only it
can know (measured or emulated times, profiles). The harness then compares.

Two request kinds, one per task family:

* :class:`CRequest` (C→CUDA): call ``extern "C" void <entry>(<params>)`` once per
  :class:`CCase`. Every pointer argument is a numpy array the back-end must copy into a fresh
  device buffer *byte for byte* (output buffers arrive poisoned: the poison must reach the
  device), call the entry with device pointers and scalars in signature order, synchronise
  the whole device (every stream the candidate may have created), and copy every ``out`` /
  ``inout`` buffer back. Cases are independent: buffers are never reused across cases.
* :class:`TorchRequest` (PyTorch→CUDA): for every configuration and trial, import the
  reference with the configuration's constant overrides, build ``Model`` and ``ModelNew``
  from identically seeded RNGs, draw inputs, run both, and return both outputs plus the
  dynamic anti-cheat findings. :func:`veriforge.cuda.evaluate.torchrun.run_torch_case` does
  exactly that for any torch device; back-ends call it rather than re-implementing it.

Back-ends are looked up by name with :func:`get_backend`: ``"cpu"`` is
:class:`veriforge.cuda.evaluate.cpu.CpuBackend`; ``"gpu"`` is the class ``GpuBackend`` in
:mod:`veriforge.cuda.evaluate.gpu`. A back-end raises nothing for a bad *candidate*: compile
errors, crashes and timeouts come back as a :class:`BackendRun` with that ``status``. It raises
:class:`BackendUnavailableError` when it cannot run at all (no GPU, no compiler).

Isolation: untrusted code must never run in the harness's process. A back-end whose
``isolates(family)`` returns True keeps the candidate in child processes it supervises itself
(the CPU runtime runs C→CUDA candidates as separate programs); otherwise the harness calls
``run_c`` / ``run_torch`` inside a fresh subprocess with a timeout and a process-group kill
(:mod:`veriforge.cuda.evaluate.isolation`). Requests and results are therefore picklable.
"""

from __future__ import annotations

import importlib
import re
import signal
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from veriforge.core.types import Measurement
from veriforge.errors import CudaError

__all__ = [
    "HARNESS_VERSION",
    "Backend",
    "BackendRun",
    "BackendUnavailableError",
    "CCase",
    "CParam",
    "CRequest",
    "CaseOutput",
    "RunStatus",
    "TimingOptions",
    "TorchConfig",
    "TorchRequest",
    "describe_exit",
    "get_backend",
]

HARNESS_VERSION = "3"  # 2: sandboxed runs, secret trials, device-memory guard, race and round-trip checks
# 3: result files carry the run's token; crash verdicts name their cause; rel error vs max(|ref|, atol*scale)
"""Part of every cache key: bump it when a rule change could turn a pass into a fail."""

_SANITIZER_SIGNAL = re.compile(r"(?:Address|Undefined|Leak|Memory|Thread)Sanitizer:?\s*(?:DEADLYSIGNAL\s*=*\s*"
                               r"==\d+==ERROR: \w+Sanitizer: )?(SEGV|BUS|FPE|ILL|ABRT)\b")
_SANITIZER_ERROR = re.compile(r"==\d+==ERROR: (\w+Sanitizer): ([\w-]+)")


def describe_exit(code: int | None, stderr: str = "") -> tuple[str, str]:
    """How a candidate's process ended abnormally, as ``(label, phrase)``: ``("SIGSEGV", "was killed
    by SIGSEGV (signal 11)")``, ``("exit status 0", "exited (status 0) before writing every
    result")``. Every abnormal end is a crash verdict that names its cause; a sanitizer that turned
    a signal into ``exit(1)`` is reported as the signal it caught."""
    if code is None:
        return "lost", "was lost (its process ended without an exit status)"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return name, f"was killed by {name} (signal {-code})"
    m = _SANITIZER_SIGNAL.search(stderr)
    if m:
        name = "SIG" + m.group(1)
        return name, f"was stopped by {name} (reported by the sanitizer, exit status {code})"
    m = _SANITIZER_ERROR.search(stderr)
    if m:
        return m.group(2), f"was stopped by {m.group(1)}: {m.group(2)} (exit status {code})"
    if code == 0:
        return "exit status 0", "exited (status 0) before writing every result: an early exit is a crash"
    return f"exit status {code}", f"exited with status {code}"


RunStatus = Literal["ok", "compile_error", "unsupported", "crash", "timeout", "error"]
"""``ok``: every case ran (correctness is still for the harness to decide); ``compile_error``:
the candidate did not build (``message`` has the compiler's words); ``unsupported``: the back-end
cannot run a feature the candidate uses (e.g. inline PTX on the CPU runtime); ``crash``: a case
faulted (illegal address, abort, CUDA error); ``timeout``: a case ran past the limit;
``error``: anything else the candidate caused (e.g. an exception in ``ModelNew``)."""


class BackendUnavailableError(CudaError):
    """The back-end cannot run on this machine (no GPU, no compiler); not the candidate's fault."""


@dataclass(frozen=True)
class CParam:
    """One parameter of the C entry point, in signature order (from task.toml ``[[params]]``)."""

    name: str
    ctype: str  # C type exactly as in the signature, e.g. "const float*", "int"
    role: Literal["in", "out", "inout", "scalar"]

    @property
    def is_pointer(self) -> bool:
        return self.role != "scalar"


@dataclass
class CCase:
    """One call of the entry point: a configuration, a trial, and the arguments.

    ``args[i]`` belongs to ``params[i]`` of the request: a contiguous 1-D numpy array for a
    pointer parameter (its dtype already matches the C type; ``out`` buffers are poisoned),
    a Python ``int`` / ``float`` for a scalar. ``variables`` are the configuration's values
    (sizes) for back-ends that need them (cost model, profile labels).
    """

    config: str
    trial: int
    args: list[Any]
    variables: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TimingOptions:
    """How a back-end that measures time should do it (ignored by back-ends that cannot).

    ``trials`` timed runs after ``warmup`` untimed ones; ``flush_l2`` between trials;
    ``profile`` asks for an Nsight Compute profile of the first correct configuration.
    """

    enabled: bool = True
    warmup: int = 3
    trials: int = 10
    flush_l2: bool = True
    profile: bool = False


@dataclass
class CRequest:
    """Run a C→CUDA candidate on prepared cases."""

    task_id: str
    source: str
    entry: str
    params: list[CParam]
    cases: list[CCase]
    timeout_s: float = 60.0
    timing: TimingOptions = field(default_factory=TimingOptions)
    filename: str = "candidate.cu"
    memcheck: bool = False
    """Also check every memory access (AddressSanitizer on the CPU runtime, compute-sanitizer on a
    GPU where available): out-of-bounds reads/writes become ``status="crash"`` with the report."""
    baseline_source: str | None = None
    """A CUDA source with the same ``extern "C"`` entry (e.g. the task's best bundled implementation)
    that a measuring back-end times next to the candidate for a speed-up; ignored by the CPU back-end."""
    race_check: bool = True
    """Call the entry a second time per case with blocks and threads in reverse order and report
    outputs that differ as order-dependent (CPU runtime; docs/tasks.md "Dynamic checks"). Roughly
    doubles the time the candidate itself runs; ignored by back-ends that cannot reorder threads."""
    tolerances: dict[str, tuple[float, float] | None] | None = None
    """(rtol, atol) per out/inout parameter, as the harness compares it (``None`` = exact); the race
    check allows twice that between its two runs. ``None``: the dtype defaults of task.toml."""


@dataclass(frozen=True)
class TorchConfig:
    """One configuration of a PyTorch→CUDA task: constant overrides of reference.py and a seed."""

    name: str
    seed: int
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class TorchRequest:
    """Run a PyTorch→CUDA candidate (module text defining ``ModelNew``) against ``reference.py``.

    ``trials`` per configuration, trial ``t`` seeded from ``(config.seed, t)``;
    ``allowed_dtypes`` are the output dtypes the task accepts (precision downgrades are
    rejected); ``rtol``/``atol`` are not the back-end's business (the harness compares).
    """

    task_id: str
    reference_source: str
    candidate_source: str
    configs: list[TorchConfig]
    trials: int = 2
    timeout_s: float = 120.0
    timing: TimingOptions = field(default_factory=TimingOptions)
    allowed_dtypes: tuple[str, ...] = ("float32",)
    trial_numbers: tuple[int, ...] = ()
    """The trial numbers to seed from (``len == trials``); empty means ``range(trials)``."""


@dataclass
class CaseOutput:
    """What one case left behind.

    C→CUDA: ``outputs`` maps every ``out``/``inout`` parameter name to the buffer's final
    contents (numpy, same dtype and length as sent). PyTorch→CUDA: ``outputs`` holds the
    candidate's outputs as ``"out0"``, ``"out1"``… and ``reference`` the reference's, both as
    numpy arrays on the host. For both families ``problems`` lists dynamic anti-cheat findings
    (e.g. "output is a Tensor subclass", "work still running on a side stream"), each a complete
    sentence the harness turns into a rejection.
    ``seconds`` is the wall time of the call on this back-end (emulated on the CPU).
    """

    config: str
    trial: int
    outputs: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float | None = None


@dataclass
class BackendRun:
    """The result of one request. ``cases`` are in request order (torch: config-major, trial-minor)
    and complete when ``status == "ok"``; on failure they hold the cases that finished and
    ``failed_case`` names the one that did not (``"config/trial"``).

    ``measurements`` must say their provenance honestly: ``measured`` (GPU events), ``emulated``
    (CPU runtime wall time) or ``estimated`` (cost model); never mix them in one Measurement.
    ``features`` are structure features (analysis, ptxas, profile metrics) keyed by name.
    """

    status: RunStatus
    message: str = ""
    cases: list[CaseOutput] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)
    features: dict[str, Any] = field(default_factory=dict)
    log: str = ""
    failed_case: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Backend(ABC):
    """An execution back-end. Instances are cheap; create one per evaluation or reuse it."""

    name: ClassVar[str]
    """``"cpu"`` or ``"gpu"`` (what users pass as ``backend=``)."""

    @abstractmethod
    def label(self) -> str:
        """The exact producer for :attr:`Measurement.backend`, e.g. ``"cpu-runtime"``,
        ``"gpu:NVIDIA H200"``."""

    def unavailable_reason(self) -> str | None:
        """``None`` if this back-end can run here, else a sentence saying why not."""
        return None

    def isolates(self, family: str) -> bool:
        """True if this back-end already runs ``family`` candidates outside the calling process
        with a time limit; False (default) makes the harness call it in a subprocess."""
        return False

    @abstractmethod
    def run_c(self, request: CRequest) -> BackendRun:
        """Compile and run a C→CUDA candidate on every case (see the module docstring)."""

    @abstractmethod
    def run_torch(self, request: TorchRequest) -> BackendRun:
        """Run a PyTorch→CUDA candidate against its reference (see the module docstring)."""


_BACKENDS: dict[str, tuple[str, str]] = {
    "cpu": ("veriforge.cuda.evaluate.cpu", "CpuBackend"),
    "gpu": ("veriforge.cuda.evaluate.gpu", "GpuBackend"),
}


def get_backend(name: str | Backend) -> Backend:
    """The back-end called ``name`` (``"cpu"`` or ``"gpu"``); a Backend instance is returned as is."""
    if isinstance(name, Backend):
        return name
    if name not in _BACKENDS:
        raise BackendUnavailableError(f"unknown back-end {name!r}; choose one of: {', '.join(_BACKENDS)}")
    module_name, cls_name = _BACKENDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise BackendUnavailableError(f"the {name} back-end is not installed ({module_name} is missing)") from exc
        raise
    backend = getattr(module, cls_name)()
    if not isinstance(backend, Backend):
        raise BackendUnavailableError(f"{module_name}.{cls_name} does not implement evaluate.backend.Backend")
    return backend
