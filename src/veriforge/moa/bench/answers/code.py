"""Code answers (HumanEval, MBPP): find the program in a reply and build the test script around it.

Extraction: the last fenced block tagged ``python``/``py``/``python3``; else the last untagged fenced
block; else an unterminated ``python`` fence (replies cut off by ``max_tokens``) to the end; else the
text from the first ``def``/``import``/``from``/``class`` line if that parses as Python; else
``None`` (a parse failure).

HumanEval gives a function signature in the prompt and expects either the whole function or only
its body. :func:`humaneval_program` uses the reply as-is if it defines the entry point (after the
prompt, so the prompt's imports and helper functions are there), and otherwise appends it to the
prompt as the body. The test code and ``check(entry_point)`` follow.
"""

from __future__ import annotations

import ast
import re
import textwrap

__all__ = ["extract_code", "humaneval_program", "mbpp_program"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_OPEN_FENCE = re.compile(r"```[ \t]*(?:python3?|py)[^\n]*\n(.*)\Z", re.DOTALL)
_CODE_START = re.compile(r"^(?:def |async def |import |from \S+ import |class |@)", re.MULTILINE)


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def extract_code(text: str) -> str | None:
    """The program in ``text`` (see the module docstring), or ``None``."""
    blocks = _FENCE.findall(text)
    tagged = [body for tag, body in blocks if tag.lower() in ("python", "py", "python3")]
    if tagged:
        return tagged[-1].strip("\n")
    untagged = [body for tag, body in blocks if not tag]
    if untagged:
        return untagged[-1].strip("\n")
    cut = _OPEN_FENCE.search(text)
    if cut:
        return cut.group(1).strip("\n")
    start = _CODE_START.search(text)
    if start:
        code = text[start.start() :].strip("\n")
        if _parses(code):
            return code
        lines = code.splitlines()  # drop trailing prose lines until it parses
        while lines and not _parses("\n".join(lines)):
            lines.pop()
        if lines:
            return "\n".join(lines)
    return None


def _defines(code: str, name: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return bool(re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE))
    return any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name for n in ast.walk(tree)
    )


def humaneval_program(prompt: str, code: str, test: str, entry_point: str) -> str:
    """The script that passes iff ``code`` solves the HumanEval task (exit status 0)."""
    if _defines(code, entry_point):
        body = f"{prompt}\n    pass\n\n{code}" if _defines(prompt, entry_point) else f"{prompt}\n{code}"
    else:
        completion = code if code.startswith((" ", "\t")) else textwrap.indent(code, "    ")
        body = f"{prompt}{completion}"
    return f"{body}\n\n{test}\n\ncheck({entry_point})\n"


def mbpp_program(code: str, tests: list[str], setup: str = "") -> str:
    """The script that passes iff ``code`` passes MBPP's ``assert`` lines (exit status 0)."""
    return "\n".join([setup, code, "", *tests, ""])
