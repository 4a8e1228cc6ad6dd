"""Evaluation-script synthesis for D3-Gym tasks (pipeline stage 7).

``synthesize(gold_dir, outputs)`` plans how each output is to be compared with its gold
counterpart (:mod:`.plan`), then writes a self-contained ``eval(pred_dir, gold_dir) ->
(passed, message)`` script (:mod:`.codegen`). Tables, JSON, arrays, scalars, text and images are
handled deterministically, without a model; with a model (``client=``), the model plans and codes
checks for other output types (:mod:`.model`). Either way the result is only trusted once
:func:`veriforge.discovery.evalcheck.validate_evaluator` has run it against the gold output and
negative controls. See docs/d3gym-eval.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veriforge.discovery.evalsynth.codegen import render_script
from veriforge.discovery.evalsynth.model import model_check, run_sync
from veriforge.discovery.evalsynth.plan import normalize_output, plan_outputs
from veriforge.errors import VeriforgeError

__all__ = [
    "EvalScript",
    "EvalSynthesisError",
    "UnsupportedOutputError",
    "normalize_output",
    "plan_outputs",
    "render_script",
    "synthesize",
    "synthesize_async",
]


class EvalSynthesisError(VeriforgeError):
    """An evaluator could not be synthesized for a task."""


class UnsupportedOutputError(EvalSynthesisError):
    """Some output has no deterministic comparison and no model (or no usable model answer)."""

    def __init__(self, message: str, outputs: list[dict[str, Any]]):
        super().__init__(message)
        self.outputs = outputs


@dataclass
class EvalScript:
    """A synthesized evaluator: the script's source and the plan it implements (for ``task.json``)."""

    code: str
    plan: dict[str, Any]
    model_checks: dict[str, str] = field(default_factory=dict)

    def write(self, path: Path | str) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.code, encoding="utf-8")
        return path


async def synthesize_async(
    gold_dir: Path | str,
    outputs: list[str],
    *,
    client: Any = None,
    program_source: str | None = None,
    script_name: str = "eval.py",
) -> EvalScript:
    """:func:`synthesize` for asyncio callers."""
    if not outputs:
        raise EvalSynthesisError("task declares no outputs to evaluate")
    gold_dir = Path(gold_dir)
    plan = plan_outputs(gold_dir, outputs, program_source)
    checks: dict[str, str] = {}
    for i, entry in enumerate(plan["outputs"]):
        if entry["kind"] != "unsupported" or client is None or not (gold_dir / entry["path"]).is_file():
            continue
        fields, code_or_reason = await model_check(client, gold_dir / entry["path"], entry, program_source)
        if fields is None:
            entry["reason"] += f"; {code_or_reason}"
            continue
        key = f"output_{i}"
        checks[key] = code_or_reason
        entry.update(
            kind="model",
            model_code=key,
            metric=str(fields.get("metric")),
            params={"thresholds": fields.get("thresholds")},
            source="model",
            reason=str(fields.get("reason", entry.get("reason", ""))),
        )
    unsupported = [e for e in plan["outputs"] if e["kind"] == "unsupported"]
    if unsupported:
        why = "; ".join(f"{e['path']}: {e['reason']}" for e in unsupported)
        hint = "" if client is not None else " (configure a model to synthesize checks for these types)"
        raise UnsupportedOutputError(f"no evaluator for {why}{hint}", unsupported)
    for entry in plan["outputs"]:
        entry.setdefault("source", "deterministic")
    return EvalScript(code=render_script(plan, checks, name=script_name), plan=plan, model_checks=checks)


def synthesize(
    gold_dir: Path | str,
    outputs: list[str],
    *,
    client: Any = None,
    program_source: str | None = None,
    script_name: str = "eval.py",
) -> EvalScript:
    """Plan, then write an evaluator comparing ``pred_dir/<output>`` with ``gold_dir/<output>``.

    ``outputs`` are paths relative to ``pred_results/`` (a ``pred_results/`` prefix is accepted).
    ``program_source`` (the gold program) informs the plan: a program that sorts its output makes
    row order part of the answer. ``client`` is a :class:`veriforge.llm.LLMClient`, used only
    for outputs no deterministic comparison fits. Raises :class:`UnsupportedOutputError` when
    some output cannot be evaluated.
    """
    return run_sync(
        synthesize_async(
            gold_dir, outputs, client=client, program_source=program_source, script_name=script_name
        )
    )
