"""PyTorch→CUDA correctness across a trust boundary: the reference and the candidate never share a process.

Two children per evaluation:

1. **reference** (trusted task code, not confined): for every configuration and trial it seeds
   torch, builds ``Model`` from ``get_init_inputs()``, draws ``get_inputs()``, runs the reference,
   writes the reference outputs (``.npy``) into a harness-private directory (root, 0700) and only
   the *inputs* (``init.pt``, ``inputs.pt``) into the candidate's work directory;
2. **candidate** (confined by :mod:`veriforge.sandbox`: per-run uid, private read-only filesystem
   view, no network, rlimits, whole tree killed by uid): it sees its work directory and nothing of
   the harness — not the reference outputs, not the reference model, not the run store. It seeds
   torch the same way (so ``ModelNew``'s parameters match ``Model``'s, as KernelBench expects),
   runs ``ModelNew`` on the inputs and writes its outputs as ``.npy`` plus ``result.json``.

The harness reads the candidate's files as hostile data: no pickle (``np.load`` with
``allow_pickle=False``), no links followed, sizes capped. Dynamic checks that need the live
objects (plain ``torch.Tensor`` outputs on the right device, outputs that alias an input,
monkey-patched torch/timers) run in the candidate's process and are reported by it; the checks
that must not be forgeable (shapes, dtypes, output count, values) are made by the harness from the
arrays and the trusted reference.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .backend import BackendRun, CaseOutput, TorchRequest

__all__ = ["candidate_main", "candidate_policy", "reference_main", "run_torch_split", "warm_up"]

MAX_RESULT_JSON = 1 << 20
MEMORY_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "arange",
    "fill_", "zero_", "copy_", "_to_copy", "to", "clone", "contiguous", "view", "_unsafe_view", "reshape",
    "_reshape_alias", "as_strided", "alias", "detach", "detach_", "t", "transpose", "permute", "expand",
    "squeeze", "unsqueeze", "select", "slice", "split", "split_with_sizes", "chunk", "unbind", "narrow",
    "flatten", "unflatten", "view_as", "lift_fresh", "lift_fresh_copy", "resize_", "set_", "_local_scalar_dense",
    "item", "is_same_size", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "record_stream",
})
"""ATen operators a candidate's ``forward`` may run: allocation, copies and views. Anything else
(``mm``, ``add``, ``softmax``…), however it is spelled in Python, is PyTorch doing the work."""
_GRACE_S = 30.0


def candidate_policy(timeout_s: float, *, gpu: bool) -> Any:
    """The sandbox policy for a PyTorch candidate process (torch maps a lot of address space, and
    its kernel server's threads count against the process limit)."""
    from veriforge.cuda.evaluate.configured import tighten
    from veriforge.sandbox import Limits, Policy

    threads = int(os.environ.get("VF_CPU_THREADS") or os.cpu_count() or 1)
    policy = Policy(limits=Limits(timeout_s=timeout_s, cpu_s=None, memory_mb=None if gpu else 65536,
                                  file_size_mb=2048, max_procs=128 + 2 * threads, max_output_bytes=1_000_000),
                    max_open_files=1024)
    return tighten(policy, gpu=gpu)  # the user's sandbox.* settings, as upper bounds


# ---- the harness side ----------------------------------------------------------------------------

def _request_json(request: TorchRequest, device: str) -> dict[str, Any]:
    from .torchrun import trial_seed

    trials = list(request.trial_numbers) or list(range(request.trials))
    cases = []
    for cfg in request.configs:
        for t in trials:
            cases.append({"config": cfg.name, "trial": t, "seed": trial_seed(cfg.seed, t)})
    return {"device": device, "cases": cases}


def run_torch_split(backend: str, request: TorchRequest, timeout_s: float, *, device: str,
                    label: str) -> BackendRun:
    """Correctness of ``request`` on ``device`` with the reference and the candidate in separate
    processes (see the module docstring); same BackendRun shape as the in-process runner."""
    from .isolation import uses_zygote

    req = _request_json(request, device)
    gpu = device.startswith("cuda")
    with tempfile.TemporaryDirectory(prefix="vf-torch-ref-") as refdir, \
            tempfile.TemporaryDirectory(prefix="vf-torch-cand-") as work:
        Path(refdir, "reference.py").write_text(request.reference_source)
        Path(refdir, "configs.json").write_text(json.dumps(
            [{"name": c.name, "overrides": c.overrides} for c in request.configs]))
        Path(work, "request.json").write_text(json.dumps(req))
        Path(work, "candidate.py").write_text(request.candidate_source)
        zygote = uses_zygote(backend)
        ref = _run_trusted(zygote, "reference_main", [refdir, work], refdir, timeout_s)
        ref_meta = _read_json(Path(refdir) / "ref.json", trusted=True)
        if ref_meta is None or ref_meta.get("status") != "ok":
            why = (ref_meta or {}).get("message") or ref
            return BackendRun(status="error", message=f"the task's reference failed, not the candidate: {why}")
        policy = candidate_policy(timeout_s, gpu=gpu)
        extra_env: dict[str, str] = {}
        if not gpu:
            from veriforge.cuda.cpu.build import lend_runtime

            # The candidate compiles its CUDA against the runtime we built, lent read-only.
            extra_env, paths = lend_runtime()
            policy = policy.replace(expose=(*policy.expose, *paths))
        started = time.monotonic()
        outcome, isolation, log = _run_candidate(zygote, work, refdir, policy, timeout_s, extra_env)
        outcome["wall_s"] = time.monotonic() - started
        run = _merge(req, Path(refdir), Path(work), ref_meta, outcome, request, device, label, log, timeout_s)
        run.features["isolation"] = isolation
        return run


def _run_trusted(zygote: bool, function: str, args: list[str], logdir: str, timeout_s: float) -> str:
    """Run a trusted step in a fresh process; returns '' or a description of how it failed."""
    out, err = os.path.join(logdir, f"{function}.out"), os.path.join(logdir, f"{function}.err")
    if zygote:
        from .zygote import ZygoteError, get_zygote

        try:
            res = get_zygote().run(req="", res="", cwd=logdir, out=out, err=err, env=dict(os.environ),
                                   timeout_s=timeout_s + 5, call=[__name__, function, args])
        except ZygoteError:
            zygote = False
        else:
            return "" if res.code == 0 else f"exit {res.code}; {_tail_file(err)}"
    import subprocess

    try:
        with open(out, "wb") as fo, open(err, "wb") as fe:
            proc = subprocess.run([sys.executable, "-m", __name__, function, *args], stdout=fo, stderr=fe,
                                  stdin=subprocess.DEVNULL, timeout=timeout_s + _GRACE_S, check=False)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout_s:g} s"
    return "" if proc.returncode == 0 else f"exit {proc.returncode}; {_tail_file(err)}"


def _run_candidate(zygote: bool, work: str, logdir: str, policy: Any, timeout_s: float,
                   extra_env: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Run the candidate step confined; returns (outcome, isolation, log)."""
    from .isolation import candidate_env, run_confined

    logs = Path(logdir) / "candidate"
    logs.mkdir(exist_ok=True)
    res = run_confined(Path(work), policy, candidate_env(extra_env), call=[__name__, "candidate_main", [work]],
                       logdir=logs, timeout_s=timeout_s + 5, use_zygote=zygote)
    outcome = {"code": res.code, "timed_out": res.timed_out, "lost": res.lost}
    return outcome, res.isolation, (res.stdout[-4000:] + res.stderr[-4000:]).strip()


def _tail_file(path: str, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode(errors="replace").strip()
    except OSError:
        return ""


def _read_json(path: Path, *, trusted: bool) -> dict[str, Any] | None:
    from .driver import read_untrusted

    try:
        data = path.read_bytes() if trusted else read_untrusted(path, MAX_RESULT_JSON)
        if len(data) > MAX_RESULT_JSON:
            return None
        value = json.loads(data)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _read_array(path: Path, limit: int) -> Any:
    import numpy as np

    from .driver import read_untrusted

    data = read_untrusted(path, limit)
    if len(data) > limit:
        raise ValueError(f"{path.name} is larger than any answer could be")
    return np.load(io.BytesIO(data), allow_pickle=False)


def _merge(req: dict[str, Any], refdir: Path, work: Path, ref_meta: dict[str, Any], outcome: dict[str, Any],
           request: TorchRequest, device: str, label: str, log: str, timeout_s: float) -> BackendRun:
    import numpy as np

    from .torchrun import forward_times

    result = _read_json(work / "result.json", trusted=False)
    run = BackendRun(status="ok", log=log)
    if outcome.get("timed_out"):
        return BackendRun(status="timeout", message=f"the candidate did not finish within {timeout_s:g} s and was "
                                                    f"killed", log=log)
    if result is None:
        code = outcome.get("code")
        reason = ("its fork server died" if outcome.get("lost") or code is None else
                  (f"signal {-code}" if code < 0 else f"exit status {code}"))
        return BackendRun(status="crash", message=f"the candidate crashed the evaluation process ({reason}) before "
                                                  f"reporting its outputs:\n{log[-2000:] or '(no output)'}", log=log)
    if outcome.get("code") not in (0, None):
        code = outcome["code"]
        how = f"signal {-code}" if code < 0 else f"exit status {code}"
        return BackendRun(status="crash", message=f"the candidate's process ended abnormally ({how}) after writing "
                                                  f"its results", log=log)
    status = str(result.get("status", "error"))
    if status == "compile_error":
        return BackendRun(status="compile_error", message=str(result.get("message", ""))[:4000], log=log)
    patched = [str(p) for p in result.get("patched", [])][:20]
    got_cases = result.get("cases") if isinstance(result.get("cases"), list) else []
    for k, (case, ref_case) in enumerate(zip(req["cases"], ref_meta["cases"], strict=True)):
        if k >= len(got_cases):
            break
        got = got_cases[k] if isinstance(got_cases[k], dict) else {}
        out = CaseOutput(config=case["config"], trial=case["trial"])
        secs = got.get("seconds")
        out.seconds = float(secs) if isinstance(secs, int | float) and secs >= 0 else None
        out.problems = [str(p)[:500] for p in (got.get("problems") or [])][:20]
        outs = got.get("outputs") if isinstance(got.get("outputs"), list) else []
        if len(outs) != len(ref_case["outputs"]):
            out.problems.append(f"the candidate returned {len(outs)} output(s), the reference "
                                f"{len(ref_case['outputs'])}")
        for i, ref_info in enumerate(ref_case["outputs"]):
            name = f"out{i}"
            ref = np.load(refdir / str(k) / f"{name}.npy", allow_pickle=False)
            out.reference[name] = ref
            if i >= len(outs):
                continue
            info = outs[i] if isinstance(outs[i], dict) else {}
            try:
                arr = _read_array(work / str(k) / f"{name}.npy", 16 * ref.nbytes + (1 << 16))
            except (OSError, ValueError) as exc:
                out.problems.append(f"output {i}: the candidate's result file is unreadable ({exc})")
                continue
            dtype = str(info.get("dtype", ""))
            if dtype != ref_info["dtype"] and dtype.removeprefix("torch.") not in request.allowed_dtypes:
                out.problems.append(f"output {i} has dtype {dtype}, the reference {ref_info['dtype']}: precision "
                                    f"changes are not allowed by this task")
                continue
            if tuple(arr.shape) != tuple(ref.shape):
                out.problems.append(f"output {i} has shape {tuple(arr.shape)}, the reference {tuple(ref.shape)}")
            out.outputs[name] = arr
        run.cases.append(out)
    if patched and run.cases:
        for c in run.cases:
            c.problems.append(f"the candidate replaced {', '.join(patched)} (monkey-patching is not allowed)")
    if status != "ok":
        run.status = "error"
        run.message = str(result.get("message", "the candidate failed"))[:4000]
        run.failed_case = str(result.get("failed_case") or "")[:200] or None
        return run
    if len(run.cases) < len(req["cases"]):
        run.status = "crash"
        run.message = "the candidate's process stopped before it had run every case"
        return run
    reported = sum(c.seconds for c in run.cases if c.seconds is not None)
    if reported > outcome.get("wall_s", float("inf")) * 1.05 + 0.01:
        # The times come from inside the candidate's process: they cannot exceed the harness's clock.
        for c in run.cases:
            c.problems.append(f"the candidate's process reported {reported:.3f} s of forward time in a "
                              f"{outcome['wall_s']:.3f} s run: its timing was tampered with")
    run.measurements.extend(forward_times(run.cases, device, label, "wall time of ModelNew.forward reported by "
                                                                    "the candidate's process (not CUDA events)"))
    return run


# ---- the children ----------------------------------------------------------------------------------

def reference_main(refdir: str, work: str) -> int:
    """Trusted child: reference outputs into ``refdir``, inputs into ``work``."""
    import numpy as np
    import torch

    from veriforge.cuda.tasks.reference import load_torch_reference

    from .torchrun import _clone, _host, _outputs, _sync, _to

    req = json.loads(Path(work, "request.json").read_text())
    source = Path(refdir, "reference.py").read_text()
    overrides = {c["name"]: c["overrides"] for c in json.loads(Path(refdir, "configs.json").read_text())}
    device = req["device"]
    meta: dict[str, Any] = {"status": "ok", "cases": []}
    modules: dict[str, Any] = {}
    try:
        for k, case in enumerate(req["cases"]):
            name = case["config"]
            if name not in modules:
                modules[name] = load_torch_reference(source, overrides.get(name), name=f"vf_ref_{name}")
            ref = modules[name]
            seed = int(case["seed"])
            torch.manual_seed(seed)
            init = list(ref.get_init_inputs())
            torch.manual_seed(seed)
            model = ref.Model(*init).to(device).eval()
            torch.manual_seed(seed + 1)
            inputs = list(ref.get_inputs())
            for d in (Path(work, str(k)), Path(refdir, str(k))):
                d.mkdir(exist_ok=True)
            torch.save(init, Path(work, str(k), "init.pt"))
            torch.save([_clone(v) for v in inputs], Path(work, str(k), "inputs.pt"))
            with torch.no_grad():
                outs = _outputs(model(*[_to(v, device) for v in inputs]))
            _sync(device)
            infos = []
            for i, o in enumerate(outs):
                if not isinstance(o, torch.Tensor):
                    raise TypeError(f"reference output {i} is a {type(o).__name__}, not a tensor")
                np.save(Path(refdir, str(k), f"out{i}.npy"), _host(o), allow_pickle=False)
                infos.append({"dtype": str(o.dtype).removeprefix("torch."), "shape": list(o.shape)})
            meta["cases"].append({"outputs": infos})
    except Exception as exc:
        meta = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
    Path(refdir, "ref.json").write_text(json.dumps(meta))
    return 0


def candidate_main(work: str) -> int:
    """Confined child: run ``ModelNew`` on the inputs in ``work``; outputs as ``.npy`` + result.json."""
    import numpy as np
    import torch

    from .torchrun import _fingerprint, _host, _outputs, _ranges_overlap, _sync, _to, load_candidate

    os.chdir(work)
    req = json.loads(Path("request.json").read_text())
    device = req["device"]
    result: dict[str, Any] = {"status": "ok", "message": "", "cases": []}
    warm_up()
    write_result = _result_writer()
    before = _fingerprint()
    try:
        cand = load_candidate(Path("candidate.py").read_text())
    except Exception as exc:
        result.update(status="compile_error", message=f"the candidate failed to load: {type(exc).__name__}: {exc}")
        write_result(result)
        return 0
    for k, case in enumerate(req["cases"]):
        where = f"{case['config']}/{case['trial']}"
        try:
            init = torch.load(Path(str(k), "init.pt"), weights_only=True)
            inputs = [_to(v, device) for v in torch.load(Path(str(k), "inputs.pt"), weights_only=True)]
            torch.manual_seed(int(case["seed"]))
            model = cand.ModelNew(*init).to(device).eval()
            guard = _compute_guard()
            from veriforge.cuda.torchbind.cpu_backend import record_calls

            start = time.perf_counter()
            with torch.no_grad(), guard, record_calls() as handed:
                got = _outputs(model(*inputs))
            _sync(device)
            seconds = time.perf_counter() - start
            problems, infos = [], []
            if device == "cpu":
                problems += _unwritten_outputs(got, handed)
            if guard.ops:
                names = ", ".join(f"aten.{n}" for n in sorted(guard.ops)[:8])
                problems.append(f"forward ran PyTorch compute operators ({names}): the work must be done by the "
                                f"candidate's CUDA kernels, not by torch")
            for i, g in enumerate(got):
                if not isinstance(g, torch.Tensor):
                    problems.append(f"output {i} is a {type(g).__name__}, not a torch.Tensor")
                    continue
                if type(g) is not torch.Tensor and type(g) is not torch.nn.Parameter:
                    problems.append(f"output {i} is a {type(g).__name__} (a Tensor subclass): lazy or subclassed "
                                    f"outputs are not allowed")
                    continue
                if g.is_meta or g.device.type != torch.device(device).type:
                    problems.append(f"output {i} lives on {g.device}, expected {device}")
                    continue
                for j, x in enumerate(inputs):
                    if isinstance(x, torch.Tensor) and _ranges_overlap(g, x):
                        problems.append(f"output {i} aliases input {j} (outputs must be new memory: the task is "
                                        f"not in-place)")
                np.save(Path(str(k), f"out{i}.npy"), _host(g), allow_pickle=False)
                infos.append({"dtype": str(g.dtype).removeprefix("torch."), "shape": list(g.shape)})
            result["cases"].append({"seconds": seconds, "problems": problems, "outputs": infos})
        except Exception as exc:
            result.update(status="error", failed_case=where,
                          message=f"config {case['config']!r} (trial {case['trial']}): {type(exc).__name__}: {exc}")
            break
    after = _fingerprint()
    result["patched"] = sorted(k for k in before if before[k] != after.get(k))
    write_result(result)
    return 0


def _unwritten_outputs(got: list[Any], handed: list[tuple[int, int]]) -> list[str]:
    """Outputs of ``forward`` whose memory was never passed to the candidate's CUDA code (CPU
    back-end: every host-function call is recorded), i.e. numbers computed some other way."""
    import torch

    if not handed:
        return ["forward never called the candidate's CUDA code: the work must be done by its kernels"]
    out = []
    for i, g in enumerate(got):
        if not isinstance(g, torch.Tensor) or not g.numel():
            continue
        lo = g.untyped_storage().data_ptr()
        hi = lo + g.untyped_storage().nbytes()
        if not any(a < hi and lo < b for a, b in handed if b > a):
            out.append(f"output {i} was never handed to the candidate's CUDA code: its numbers were computed "
                       f"some other way (NumPy, Python, a copy of something else)")
    return out


def warm_up() -> None:
    """Enter a dispatch guard once: the first use imports ``torch._dynamo``, which rewraps
    ``torch.manual_seed``; that must happen before the fingerprint, not look like the candidate's
    doing. The fork server calls this once so children do not pay for it."""
    import torch

    with torch.no_grad(), _compute_guard():
        torch.zeros(1).add_(1)


def _compute_guard() -> Any:
    """A dispatch-level recorder of the ATen operators ``forward`` runs (spelling-independent:
    ``torch.mm``, ``x @ w``, ``torch.ops.aten.mm``, ``getattr(torch, name)`` and helpers outside
    ``forward`` all reach the dispatcher)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Guard(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: set[str] = set()

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            name = func.overloadpacket.__name__
            if name not in MEMORY_OPS:
                self.ops.add(name)
            return func(*args, **(kwargs or {}))

    return _Guard()


def _result_writer() -> Any:
    """A writer of result.json bound to ``json.dumps`` and ``os`` functions taken *now*, before the
    candidate is imported: a candidate that patches them afterwards cannot rewrite its own report
    through them (it still runs in this process; see docs/sandbox.md, known limits)."""
    dumps, os_open, os_write, os_close, os_replace = json.dumps, os.open, os.write, os.close, os.replace
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW

    def write(result: dict[str, Any]) -> None:
        data = dumps(result).encode()
        fd = os_open("result.json.tmp", flags, 0o600)
        try:
            while data:
                data = data[os_write(fd, data):]
        finally:
            os_close(fd)
        os_replace("result.json.tmp", "result.json")

    return write


def _main(argv: list[str]) -> int:
    function = {"reference_main": reference_main, "candidate_main": candidate_main}[argv[0]]
    code = function(*argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # never run the candidate's atexit hooks or finalisers


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
