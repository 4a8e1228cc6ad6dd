"""Model-written checks for outputs no deterministic comparison fits (PDF, SVG, pickles, ...).

Plan first, then code, as two requests: the model states the metric and thresholds as JSON, then
writes ``check(pred_path, gold_path) -> (bool, str)`` for that plan. The code is only accepted
if it parses and defines ``check`` with two parameters; it is then validated like every other
evaluator (gold must pass, negative controls must fail: :mod:`veriforge.discovery.evalcheck`).
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import json
import re
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_FENCE = re.compile(r"```(?P<lang>[a-zA-Z0-9_+-]*)\s*\n(?P<body>.*?)```", re.DOTALL)

PLAN_PROMPT = """You are writing the evaluation plan for one output file of a data-analysis task.
A correct prediction is a file written by another program that did the same analysis.
Output file: {path} ({size} bytes, type guess: {kind_hint}).
{gold_excerpt}
{program_excerpt}
Decide how to compare a predicted file with this gold file: what to parse, which metric,
which thresholds (tolerances), and what must make the comparison fail.
Answer with one JSON object in a ```json block with keys "metric", "thresholds", "reason"."""

CODE_PROMPT = """Write a Python function for this evaluation plan:
{plan}
Signature: def check(pred_path: str, gold_path: str) -> tuple[bool, str]
Return (passed, message). Use only the standard library, numpy or PIL, imported INSIDE the function.
Never raise on a bad prediction: return (False, reason). Answer with one ```python block."""


def run_sync(coro: Awaitable[T]) -> T:
    """Run a coroutine from synchronous code, also when called inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)  # type: ignore[arg-type]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()  # type: ignore[arg-type]


def fenced(text: str, lang: str) -> str | None:
    """The body of the first ```lang block (or of the first block of any language)."""
    blocks = list(_FENCE.finditer(text))
    for b in blocks:
        if b.group("lang").lower() == lang:
            return b.group("body")
    return blocks[0].group("body") if blocks else None


def code_problem(code: str) -> str | None:
    """Why ``code`` is not an acceptable check function (``None`` when it is)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"syntax error: {exc}"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            if len(node.args.args) != 2:
                return "check must take exactly (pred_path, gold_path)"
            return None
    return "no top-level function named check"


def _excerpt(path: Path, limit: int = 1500) -> str:
    data = path.read_bytes()
    try:
        text = data[:limit].decode("utf-8")
        return f"Gold file begins:\n{text}"
    except UnicodeDecodeError:
        return f"Gold file is binary; first bytes: {data[:32]!r}"


async def model_check(
    client: Any, gold_path: Path, entry: dict[str, Any], program_source: str | None
) -> tuple[dict[str, Any], str] | tuple[None, str]:
    """``(plan_fields, code)`` from the model, or ``(None, reason)`` when it gave nothing usable."""
    prog = f"The gold program:\n```python\n{program_source[:4000]}\n```" if program_source else ""
    plan_reply = await client.complete(
        PLAN_PROMPT.format(
            path=entry["path"],
            size=gold_path.stat().st_size,
            kind_hint=entry.get("reason", "unknown"),
            gold_excerpt=_excerpt(gold_path),
            program_excerpt=prog,
        ),
        temperature=0,
    )
    raw = fenced(plan_reply, "json") or plan_reply
    try:
        plan = json.loads(raw)
        if not isinstance(plan, dict) or "metric" not in plan:
            raise ValueError("plan lacks a metric")
    except ValueError as exc:
        return None, f"model plan unusable: {exc}"
    feedback = ""
    for _attempt in range(2):
        reply = await client.complete(
            CODE_PROMPT.format(plan=json.dumps(plan, indent=1)) + feedback, temperature=0
        )
        code = fenced(reply, "python") or reply
        problem = code_problem(code)
        if problem is None:
            return plan, code
        feedback = f"\nYour previous answer was rejected: {problem}. Try again."
    return None, f"model code unusable: {problem}"
