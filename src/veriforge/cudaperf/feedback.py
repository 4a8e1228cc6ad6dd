"""What a CUDA-writing model is told: the task prompt, and the feedback after each attempt.

One module for every consumer — inference-time refinement (:mod:`veriforge.cudaperf.refine`), GRPO
multi-turn rollouts and dataset exports — so a policy is trained on exactly the wording it later
sees at inference time.

* :func:`task_prompt` — system + user messages: the task contract (what to compute, the exact host
  signature or the ``ModelNew`` contract), the reference source (the C function or the PyTorch
  ``Model``) and the answer format: ONE fenced ```` ```cuda ```` block (C→CUDA) or ```` ```python
  ```` block (PyTorch→CUDA).
* :func:`feedback_message` — what the model sees after an attempt, short and actionable: compile
  errors pinned to its own lines, the verdict's reason (which outputs were wrong, where and by how
  much; the crash; the timeout; why the anti-cheat rejected it), and for a correct attempt the
  speed-up *with its provenance* ("estimated" by the cost model on the CPU back-end, "measured" on
  a GPU) and the analysis findings (uncoalesced accesses, bank conflicts, occupancy limits,
  divergence, barriers, the bound of each launch).

**Nothing secret leaks.** The harness draws every trial after the first from a fresh secret, and
its verdict reason already names one wrong element with its expected value. Feedback repeats that
reason verbatim and, for the *other* failing configurations, only the count of wrong elements and
the error sizes — expected values are cut — and never reads the evaluation's input secret,
inputs or reference outputs. A test checks this.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = ["SYSTEM_PROMPT", "extract_candidate", "feedback_for_text", "feedback_message", "task_prompt"]

SYSTEM_PROMPT = (
    "You are an expert CUDA performance engineer. You write complete, correct, fast CUDA. Correctness "
    "comes first: every answer is compiled, run on several input sizes with fresh random inputs and "
    "compared against the reference before its speed counts. Computing the result anywhere but in CUDA "
    "kernels, copying it from the reference, or special-casing the inputs is detected and scores worst."
)

#: Feedback is trimmed to this many characters: long logs drown the signal and the context window.
MAX_FEEDBACK_CHARS = 4000

_PY_FENCE = re.compile(r"```[ \t]*(?:python|py)[^\n]*\n(.*?)(?:```|\Z)", re.S | re.I)
_ANY_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)


def _spec(task: Any) -> Any:
    from veriforge.cuda.evaluate.harness import resolve_task

    return resolve_task(task)


def _reference_source(spec: Any) -> str:
    """The reference as the model should read it: ``reference.c`` (C→CUDA) or ``reference.py``."""
    if spec.folder is None:
        return ""
    name = "reference.c" if spec.family == "c2cuda" else "reference.py"
    path = Path(spec.folder) / name
    return path.read_text() if path.is_file() else ""


def _c_user(spec: Any) -> str:
    from veriforge.optiml.prompts import solve_signature, task_contract

    ref = _reference_source(spec).strip()
    parts = [task_contract(spec), ""]
    if ref:
        parts += ["The serial C reference that defines the result (`reference` has the same parameters):",
                  "```c", ref, "```", ""]
    parts += [
        "Write the complete .cu file. Answer with a short plan, then the file in ONE fenced block:",
        "```cuda",
        "#include <cuda_runtime.h>",
        "__global__ void my_kernel(/* ... */) { /* ... */ }",
        f"{solve_signature(spec)} {{ /* choose the launch configuration and launch */ }}",
        "```",
    ]
    return "\n".join(parts)


def _torch_user(spec: Any) -> str:
    ref = _reference_source(spec).strip()
    sizes = "; ".join(f"{c.name}: " + ", ".join(f"{k}={v}" for k, v in c.variables.items()) for c in spec.configs)
    dtypes = ", ".join(spec.allowed_dtypes)
    parts = [
        f"Task `{spec.id}`: {spec.title}", "", spec.description.strip(), "",
        "The PyTorch reference (KernelBench format):", "```python", ref, "```", "",
        "Write a Python module defining `class ModelNew(torch.nn.Module)` with the same constructor arguments "
        "and forward signature as `Model`, whose forward computes the result with your own CUDA kernels, "
        "compiled through veriforge's binding:",
        "",
        "    from veriforge.cuda.torchbind import load_cuda",
        "    CUDA_SRC = r'''<kernels + extern \"C\" host launchers taking DEVICE pointers>'''",
        "    _ext = load_cuda(\"my_ext\", CUDA_SRC)   # _ext.<launcher>(tensor, ..., int) -- tensors must be "
        "contiguous",
        "",
        "Do not compute the result with torch operators (allocation with torch.empty/zeros is fine), do not call "
        "the reference, do not change the output dtype.",
        f"Checked on these configurations (module-level constants overridden): {sizes}.",
        f"Allowed output dtypes: {dtypes}.",
        "",
        "Answer with a short plan, then the whole module in ONE fenced ```python block.",
    ]
    return "\n".join(parts)


def task_prompt(spec: Any) -> list[dict[str, str]]:
    """Chat messages (system + user) that open an episode on ``spec`` (a TaskSpec, id or folder).

    The user message is the task contract, the reference source and the answer format; it holds no
    inputs or reference outputs (those are drawn at evaluation time, partly from a secret)."""
    spec = _spec(spec)
    user = _c_user(spec) if spec.family == "c2cuda" else _torch_user(spec)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def extract_candidate(completion: Any, family: str = "c2cuda") -> str:
    """The candidate source in a model completion (text or chat messages; last message used).

    C→CUDA: the ```cuda block (:func:`veriforge.cudaperf.reward.extract_code`). PyTorch→CUDA: the
    last ```python block, else the last fenced block of any language, else the whole text — so a
    reply without the right fence still gets evaluated (and a useful verdict) instead of nothing."""
    from veriforge.cudaperf.reward import extract_code

    return extract_code(completion, family)


# ---------------------------------------------------------------------------------------------
# Feedback

_EXPECTED = re.compile(r";?\s*worst at index [^;]*?expected [^;]*?got [^;]*(?=;|$)")
_ABS_ERR = re.compile(r"max abs error [^,;()]*,?\s*")
_CUDA_STRING = re.compile(r"(?:r|R)?(?:'''|\"\"\")(.*?)(?:'''|\"\"\")", re.S)


def _cuda_of(source: str, family: str) -> str:
    """The CUDA text whose lines compiler messages refer to (a torch2cuda module embeds it)."""
    if family == "c2cuda":
        return source
    for block in _CUDA_STRING.findall(source):
        if "__global__" in block or 'extern "C"' in block:
            return block
    return source


def _no_values(message: str) -> str:
    """A comparison message without the expected/got values (kept only in the verdict's reason)."""
    return _ABS_ERR.sub("", _EXPECTED.sub("", message)).strip()


def _compile_text(result: Any, source: str, family: str) -> str:
    from veriforge.optiml.prompts import compile_feedback

    if result.details.get("unsupported"):
        return ("This cannot run on the CPU runtime used for verification: "
                f"{result.verdict.reason.removeprefix('not runnable on this back-end: ')}\n"
                "Use standard CUDA C++ (no inline PTX or unsupported intrinsics).")
    return compile_feedback(result.log or "", result.verdict.reason, _cuda_of(source, family))


def _wrong_text(result: Any) -> str:
    v = result.verdict
    lines = [f"Compiled and ran, but the result is wrong: {v.reason or 'incorrect'}"]
    failing = [r for r in v.results if not r.passed]
    for r in failing[1:4]:
        msg = _no_values(r.message) if r.message else ""
        err = []  # the absolute error is left out: with the relative one it gives away |expected|
        if r.max_rel_error is not None:
            err.append(f"max rel error {r.max_rel_error:.3g}")
        lines.append(f"- also wrong on config {r.config!r}: {msg or ', '.join(err) or 'wrong'}")
    if len(failing) > 4:
        lines.append(f"- ... {len(failing) - 4} more failing configurations")
    passed = [r.config for r in v.results if r.passed]
    if passed:
        lines.append(f"(correct on: {', '.join(passed)} — look at what differs: sizes not a multiple of the "
                     "block size, the tail, the grid covering every element)")
    return "\n".join(lines)


def _failure_text(kind: str, result: Any) -> str:
    reason = result.verdict.reason or kind
    if kind == "timeout":
        return (f"Timed out: {reason}\nLook for a loop that never ends (a grid-stride loop whose stride is 0, "
                "a spin-wait on another block) or a launch far too large.")
    if kind == "crash":
        return (f"Crashed: {reason}\nLook for out-of-bounds indices (missing `if (i < n)` guards), uninitialised "
                "or unfreed temporaries, and an invalid launch configuration.")
    return f"Rejected: {reason}"


def _cheat_text(result: Any) -> str:
    findings = [str(f) for f in (result.details.get("findings") or []) if str(f)]
    head = "Rejected by the anti-cheat checks (this scores below any honest failure):"
    body = [f"- {f}" for f in findings[:6]] or [f"- {result.verdict.reason}"]
    return "\n".join([head, *body, "Do the work in CUDA kernels on the device, on the actual inputs."])


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} µs" if seconds < 1e-3 else f"{seconds * 1e3:.3g} ms"


def _launch_bounds(result: Any) -> list[str]:
    """Per-launch notes of the largest configuration of the estimate: which bound limits it."""
    est = result.details.get("estimate") or {}
    cfgs = est.get("configs") or {}
    names = est.get("config_names") or list(cfgs)
    if not names:
        return []
    name = names[-1]
    out = []
    for launch in (cfgs.get(name) or {}).get("launches") or []:
        bound = launch.get("bound")
        if not bound:
            continue
        where = f" (line {launch['line']})" if launch.get("line") else ""
        grid, block = launch.get("grid"), launch.get("block")
        shape = f" grid {grid} x block {block}" if grid and block else ""
        t = launch.get("time_s")
        took = f", {_fmt_s(float(t))}" if isinstance(t, int | float) else ""
        out.append(f"- kernel {launch.get('kernel', '?')}{where}:{shape} is {bound}-bound on config "
                   f"{name!r}{took}")
    return out[:4]


def _findings(result: Any, *, gpu: str, limit: int) -> str:
    from veriforge.optiml.diagnosis import diagnose, summarize

    evidence = result.details.get("analysis") or result.features
    if not evidence:
        return ""
    try:
        found = diagnose(evidence, gpu=gpu, max_findings=limit)
    except Exception:  # a diagnosis that cannot read the evidence must not cost the model its feedback
        return ""
    return summarize(found, limit=limit) if found else ""


_STRUCTURE_HINTS = {
    "coalescing": "consecutive threads should touch consecutive addresses",
    "bank_conflicts": "shared-memory accesses hit the same bank; pad the array or change the stride",
    "occupancy": "a latency-bound launch with few resident warps; fewer registers/shared memory per block",
    "synchronisation": "divergent branches relative to barriers; make conditions warp-uniform",
}


def _weak_structure(result: Any, rew: Any) -> list[str]:
    """The reward's structure scores that cost something, with the features behind them."""
    f = result.features or {}
    evidence = {
        "coalescing": ", ".join(f"global {k} efficiency {f[f'global_{k}_efficiency']:.2f}" for k in ("load", "store")
                                if isinstance(f.get(f"global_{k}_efficiency"), int | float)),
        "bank_conflicts": f"{f.get('shared_load_bank_conflict_ways', float('nan')):g}-way loads",
        "occupancy": f"theoretical occupancy {f.get('theoretical_occupancy', float('nan')):.2f}",
        "synchronisation": f"{f.get('divergent_branches', float('nan')):g} divergent branches, "
                           f"{f.get('barriers', float('nan')):g} barriers",
    }
    out = []
    for name, score in (getattr(rew, "structure", None) or {}).items():
        if name in _STRUCTURE_HINTS and score < 0.9:
            out.append(f"- {name} {score:.2f} ({evidence[name]}): {_STRUCTURE_HINTS[name]}")
    return out


def _correct_text(result: Any, rew: Any, *, gpu: str, limit: int) -> str:
    prov = getattr(rew, "provenance", None) or ("measured" if result.backend == "gpu" else "estimated")
    how = ("measured on the GPU" if prov == "measured"
           else "estimated by the cost model from the CPU verification, not measured")
    speedup = getattr(rew, "speedup", None)
    if speedup is not None:
        verdict = "faster than" if speedup > 1 else "slower than" if speedup < 1 else "as fast as"
        speed = f"Speed-up over the baseline: {speedup:.3g}x ({how}) — {verdict} the baseline."
    else:
        why = getattr(rew, "reason", "") or "no time"
        speed = f"Speed-up over the baseline: unknown ({prov}): {why}. An unknown time scores as the slowest."
    lines = ["Correct on every configuration.", speed]
    t = result.time(prov)
    if t is not None:
        lines.append(f"Time on the largest configuration: {_fmt_s(t)} ({prov}).")
    bounds = _launch_bounds(result)
    if bounds:
        lines += ["Launches:", *bounds]
    weak = _weak_structure(result, rew)
    if weak:
        lines += ["Structure scores below 0.9 (1 is best):", *weak]
    found = _findings(result, gpu=gpu, limit=limit)
    if found:
        lines += ["Analysis findings, most severe first:", found]
    notes = result.details.get("estimate_notes")
    if notes:
        lines.append(f"Estimate notes: {'; '.join(str(n) for n in notes[:3]) if isinstance(notes, list) else notes}")
    return "\n".join(lines)


def _reward_line(rew: Any) -> str:
    if rew is None:
        return ""
    terms = ", ".join(f"{k} {v:+.3f}" for k, v in (getattr(rew, "terms", None) or {}).items())
    return f"Reward: {rew.value:+.3f} ({rew.outcome}{'; ' + terms if terms else ''})."


def feedback_message(result: Any, reward: Any = None, *, turn: int, turns: int, family: str | None = None,
                     source: str | None = None, gpu: str = "H100-SXM", max_findings: int = 6) -> str:
    """The user message after attempt ``turn`` (1-based) of ``turns``.

    ``result`` is the harness's EvalResult, ``reward`` the :class:`~veriforge.cudaperf.reward.Reward`
    (None: no reward line). ``source`` (the evaluated candidate; default: the one the result
    carries) is where compiler messages are pinned to lines. The closing instruction depends on
    what is left: fix the problem, or make a correct kernel faster; no instruction after the last
    turn (the message is still recorded for reports and training data)."""
    from veriforge.cudaperf.reward import outcome

    kind = getattr(reward, "outcome", None) or outcome(result)
    family = family or str(result.details.get("task_family") or "c2cuda")
    src = source if source is not None else str(result.details.get("candidate_source") or "")
    if kind == "compile_error":
        body = _compile_text(result, src, family)
    elif kind == "cheat":
        body = _cheat_text(result)
    elif kind == "wrong":
        body = _wrong_text(result)
    elif kind in ("crash", "timeout"):
        body = _failure_text(kind, result)
    else:
        body = _correct_text(result, reward, gpu=gpu, limit=max_findings)
    parts = [f"Attempt {turn} of {turns}: {kind.replace('_', ' ')}.", body]
    rl = _reward_line(reward)
    if rl:
        parts.append(rl)
    if len("\n".join(parts)) > MAX_FEEDBACK_CHARS:
        body = body[: MAX_FEEDBACK_CHARS - 400] + "\n(... truncated)"
        parts[1] = body
    fence = "```cuda" if family == "c2cuda" else "```python"
    if turn < turns:
        if kind == "correct":
            parts.append(f"Make it faster while keeping it correct (the findings above say where the time goes). "
                         f"Answer with a short plan, then the complete file in ONE {fence} block.")
        else:
            parts.append(f"Fix the problem and answer again: a short plan, then the complete file in ONE {fence} "
                         "block.")
    return "\n\n".join(parts)


def feedback_for_text(task: Any, completion_text: str, *, baseline: Any = None, backend: str = "cpu",
                      store: Any = None, config: Any = "veriforge", turn: int = 1, turns: int = 1,
                      gpu: str = "H100-SXM") -> tuple[str, Any, Any]:
    """Evaluate a completion on ``task`` and return ``(feedback, reward, eval_result)``.

    ``baseline`` is an EvalResult, a time in seconds, or None for the task's first bundled
    implementation (evaluated once, cached in ``store`` when one is given). Text that cannot be
    evaluated at all (the harness raised) gets compile-error feedback and reward, as the reward's
    trainer adapters do, so a rollout never dies on a hostile completion."""
    from veriforge.core.types import Candidate, Verdict
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.evaluate.result import EvalResult
    from veriforge.cudaperf.reward import reward as compute_reward

    spec = _spec(task)
    source = extract_candidate(completion_text, spec.family)
    language = "cuda" if spec.family == "c2cuda" else "python"
    if baseline is None and spec.implementations and spec.folder is not None:
        baseline = evaluate(spec, Path(spec.folder) / spec.implementations[0].file, backend=backend, store=store)
    try:
        res = evaluate(spec, Candidate(source=source, language=language), backend=backend, store=store)
    except Exception as exc:  # the text is hostile; the rollout must go on
        res = EvalResult(verdict=Verdict.compile_failed(f"{type(exc).__name__}: {exc}"[:500]), task_id=spec.id,
                         backend=backend, details={"task_family": spec.family, "candidate_source": source})
    rew = compute_reward(res, baseline, config=config, gpu=gpu)
    return feedback_message(res, rew, turn=turn, turns=turns, family=spec.family, source=source, gpu=gpu), rew, res

