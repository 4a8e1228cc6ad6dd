"""Prompts for OptiML's model calls and parsers for the replies.

Everything a model is told and everything read back from it lives here, so the wording can be
tuned in one place and the parsers can be tested on hostile text. Two conversations:

* **generation** (OptiML-G): the task contract (description, the exact ``extern "C"`` signature
  with device pointers, sizes and tolerance), one *thought* (strategy) and the reply format — a
  ``PLAN:`` paragraph then one fenced ```` ```cuda ```` block with the whole ``.cu`` file; after a
  failed check, a feedback message with the compiler errors pinned to the candidate's lines or
  the failing configurations and elements;
* **editing** (OptiML-X model proposer): the current kernel *with line numbers* (the diagnosis
  speaks in lines), its profile evidence (diagnosis findings, key features) and the reply format
  — ``k`` sections ``### Edit <i>: <one line>`` each with its own complete ```` ```cuda ```` block.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from veriforge.cuda.tasks.schema import TaskSpec
    from veriforge.optiml.thoughts import Thought

__all__ = [
    "EDIT_SYSTEM",
    "GENERATION_SYSTEM",
    "ParsedEdit",
    "compile_feedback",
    "edit_prompt",
    "extract_code",
    "extract_plan",
    "feedback_message",
    "generation_prompt",
    "number_lines",
    "parse_edits",
    "solve_signature",
    "task_contract",
    "verify_feedback",
]

GENERATION_SYSTEM = (
    "You are an expert CUDA engineer. You write complete, correct, fast CUDA C++ source files. "
    "Correctness comes first: your kernel is compiled and checked against a reference on several "
    "input sizes before its speed counts."
)

EDIT_SYSTEM = (
    "You are an expert CUDA performance engineer. You improve a verified CUDA kernel with small, "
    "targeted edits motivated by profiler evidence, keeping it correct."
)

#: Languages accepted as code fences, best first (a ```cuda block wins over a ```c++ one).
_FENCE_LANGS = ("cuda", "cu", "c++", "cpp", "cxx", "c", "")
_FENCE = re.compile(r"```[ \t]*([A-Za-z+#-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_PLAN = re.compile(r"(?:^|\n)\s*(?:\*\*|#+\s*)?plan(?:\*\*)?\s*:?\s*(?:\*\*)?\s*\n?(.*?)(?=```|\Z)",
                   re.I | re.S)
_EDIT_HEAD = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*)?edit[ \t]*(\d+)[ \t]*(?:\*\*)?[ \t]*[:.)-][ \t]*(.*)$", re.I | re.M)


def solve_signature(spec: TaskSpec) -> str:
    """``extern "C" void solve(const float* a, ..., int n)`` exactly as the harness calls it."""
    params = ", ".join(f"{p.type} {p.name}" for p in spec.params)
    return f'extern "C" void {spec.entry}({params})'


def _param_line(p: Any) -> str:
    if p.role == "scalar":
        return f"- `{p.type} {p.name}`: scalar input"
    what = {"in": "input (read only)", "out": "output (write every element)",
            "inout": "input and output"}[p.role]
    return f"- `{p.type} {p.name}`: device pointer, {p.size} elements, {what}"


def task_contract(spec: TaskSpec) -> str:
    """The task in words for a model: description, signature, parameters, sizes, tolerance."""
    sizes = "; ".join(
        f"{c.name}: " + ", ".join(f"{k}={v}" for k, v in c.variables.items()) for c in spec.configs
    )
    tol = spec.tolerance
    tol_text = ("exact comparison for integer outputs; floats within "
                f"rtol={tol.rtol if tol.rtol is not None else 'default'}, "
                f"atol={tol.atol if tol.atol is not None else 'default'} (x max |reference|)")
    lines = [
        f"Task `{spec.id}`: {spec.title}",
        "",
        spec.description.strip(),
        "",
        "Your file must define exactly this host function (the harness calls it):",
        "",
        f"    {solve_signature(spec)}",
        "",
        "Parameters:",
        *(_param_line(p) for p in spec.params),
        "",
        "All pointers are DEVICE pointers (already allocated with cudaMalloc). "
        f"`{spec.entry}` chooses its own launch configuration, launches one or more `__global__` "
        "kernels and returns; the harness synchronises the device afterwards. Do not copy data to the "
        "host, do not compute the result on the host, and do not call any reference implementation.",
        f"Checked on these configurations: {sizes}.",
        f"Tolerance: {tol_text}.",
    ]
    return "\n".join(lines)


def generation_prompt(spec: TaskSpec, thought: Thought, request: str | None = None) -> str:
    """The first user message for one thought."""
    parts = []
    if request and request.strip() and request.strip() != spec.description.strip():
        parts += ["The user asked for:", "", request.strip(), "",
                  "It is verified as the following task (the contract below is authoritative):", ""]
    parts += [
        task_contract(spec),
        "",
        f"Strategy to use — {thought.title} ({thought.name}):",
        thought.guidance.strip(),
        "",
        "Answer in this format:",
        "PLAN: a short paragraph: how the work maps to threads, blocks and memory under this strategy.",
        "Then the complete .cu file in ONE fenced block:",
        "```cuda",
        "#include <cuda_runtime.h>",
        "// kernels ...",
        f"{solve_signature(spec)} {{ /* launch */ }}",
        "```",
    ]
    return "\n".join(parts)


def extract_code(text: str, entry: str | None = None) -> str | None:
    """The CUDA source in a model reply, or None.

    Fenced blocks are preferred by language (cuda, cu, c++/cpp, c, unlabelled); among blocks of
    the best language, one that defines ``entry`` wins, then the longest. A reply without fences
    counts as code only if it defines ``entry`` with ``extern "C"`` and a ``__global__`` kernel
    (some models skip the fence).
    """
    blocks: list[tuple[str, str]] = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    for lang in _FENCE_LANGS:
        hits = [code for lab, code in blocks if lab == lang and code.strip()]
        if not hits:
            continue
        if entry:
            defining = [c for c in hits if re.search(rf"\b{re.escape(entry)}\s*\(", c)]
            hits = defining or hits
        return max(hits, key=len).strip("\n") + "\n"
    if not blocks and entry and 'extern "C"' in text and "__global__" in text \
            and re.search(rf"\b{re.escape(entry)}\s*\(", text):
        return text.strip("\n") + "\n"
    return None


def extract_plan(text: str) -> str:
    """The ``PLAN:`` paragraph of a reply (or the prose before the first code fence)."""
    m = _PLAN.search(text)
    if m and m.group(1).strip():
        return m.group(1).strip()
    head = text.split("```", 1)[0].strip()
    return head


# ------------------------------------------------------------------------------------------------
# Feedback after a failed check


def _source_line(source: str, line: int | None) -> str:
    lines = source.splitlines()
    if line is None or not 1 <= line <= len(lines):
        return ""
    return lines[line - 1].rstrip()


_NVCC_DIAG = re.compile(
    r"^(?P<file>[^\s(]+\.cu)\((?P<line>\d+)\): (?P<sev>error|catastrophic error): (?P<msg>.*)$", re.M)


def compile_feedback(log: str, reason: str, source: str, *, max_errors: int = 8) -> str:
    """Compiler errors pinned to the candidate's lines, each with the offending source line.

    Reads g++-style (CPU runtime) and nvcc-style messages; falls back to the verdict's reason
    when the log has no parseable position (a linker error, a tool failure).
    """
    from veriforge.cuda.cpu.build import parse_diagnostics

    found: list[tuple[int | None, int | None, str]] = []
    for d in parse_diagnostics(log, "candidate.cu"):
        if d.severity == "error":
            found.append((d.line or None, d.column or None, d.message))
    for m in _NVCC_DIAG.finditer(log):
        found.append((int(m.group("line")), None, m.group("msg").strip()))
    seen: set[tuple[int | None, str]] = set()
    out = []
    for line, col, msg in found:
        if (line, msg) in seen:
            continue
        seen.add((line, msg))
        where = f"line {line}" + (f", column {col}" if col else "") if line else "(no line)"
        text = f"- {where}: error: {msg}"
        src = _source_line(source, line)
        if src:
            text += f"\n    {line} | {src}"
        out.append(text)
        if len(out) >= max_errors:
            break
    if not out:
        body = (reason or log or "the compiler gave no message").strip()
        return "Compilation failed:\n" + body[:2000]
    more = len({(ln, m) for ln, _, m in found}) - len(out)
    tail = f"\n(... {more} more errors)" if more > 0 else ""
    return "Compilation failed:\n" + "\n".join(out) + tail


def verify_feedback(verdict: Any, *, max_inputs: int = 4) -> str:
    """What went wrong at run time: the reason and every failing configuration's message."""
    failing = [r for r in getattr(verdict, "results", []) if not r.passed]
    head = "Rejected" if getattr(verdict, "rejected", False) else "Compiled, but the result is wrong"
    lines = [f"{head}: {verdict.reason or 'incorrect'}"]
    for r in failing[:max_inputs]:
        if r.message and r.message not in verdict.reason:
            lines.append(f"- config {r.config!r}: {r.message}")
    if len(failing) > max_inputs:
        lines.append(f"- ... {len(failing) - max_inputs} more failing configurations")
    passed = [r.config for r in getattr(verdict, "results", []) if r.passed]
    if passed:
        lines.append(f"(passed: {', '.join(passed)})")
    return "\n".join(lines)


def feedback_message(body: str, entry: str) -> str:
    """A feedback turn: what failed, then the instruction to answer with a fixed complete file."""
    return (f"{body}\n\nFix the problem and answer again in the same format: PLAN, then the complete .cu "
            f"file in one ```cuda block defining `{entry}`.")


# ------------------------------------------------------------------------------------------------
# Edit proposals (OptiML-X)


def number_lines(source: str) -> str:
    """``source`` with right-aligned line numbers, so findings like "line 12" can be located."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, start=1))


def _features_text(features: Mapping[str, Any], limit: int) -> str:
    items = []
    for key, value in features.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        items.append(f"- {key} = {value:.4g}")
        if len(items) >= limit:
            break
    return "\n".join(items) if items else "- (no features measured)"


def edit_prompt(source: str, *, k: int, findings_text: str, features: Mapping[str, Any] | None = None,
                objective: str | None = None, contract: str | None = None, max_features: int = 16) -> str:
    """The user message asking for ``k`` edited kernels, each with a one-line description."""
    parts = []
    if contract:
        parts += [contract, ""]
    parts += [
        "Current kernel (verified correct; line numbers added for reference, do not include them):",
        "```cuda",
        number_lines(source),
        "```",
        "",
        "Profile evidence — bottleneck diagnosis, most severe first:",
        findings_text.strip() or "- no bottleneck found by the diagnosis",
        "",
        "Key features:",
        _features_text(features or {}, max_features),
    ]
    if objective:
        parts += ["", f"Current objective: {objective}"]
    parts += [
        "",
        f"Propose {k} different edits of this kernel, each addressing the evidence above and keeping it "
        "correct and keeping the same host function signature. Format, exactly:",
        "### Edit 1: <one-line description of the edit>",
        "```cuda",
        "<the complete edited .cu file>",
        "```",
        "### Edit 2: ...",
    ]
    return "\n".join(parts)


@dataclass(frozen=True)
class ParsedEdit:
    """One edit section of a reply: its number, one-line description and complete source."""

    index: int
    description: str
    source: str


def parse_edits(text: str, entry: str = "solve") -> tuple[list[ParsedEdit], list[str]]:
    """Edits from a reply, and a reason for every section that had to be skipped.

    A section starts at a ``Edit <i>: <description>`` heading (markdown ``#`` and ``**`` allowed)
    and must contain a code block that defines ``entry``. A reply without any heading but with
    code blocks is read as one edit per block with an empty description (skipped: an edit must
    say what it does).
    """
    heads = list(_EDIT_HEAD.finditer(text))
    edits: list[ParsedEdit] = []
    skipped: list[str] = []
    if not heads:
        if _FENCE.search(text):
            skipped.append("code without an 'Edit <i>: <description>' heading")
        else:
            skipped.append("no edit sections and no code in the reply")
        return edits, skipped
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[head.end():end]
        number = int(head.group(1))
        description = head.group(2).strip().strip("*").strip()
        if not description:
            skipped.append(f"edit {number}: no description")
            continue
        code = extract_code(body, entry)
        if code is None:
            skipped.append(f"edit {number}: no code block")
            continue
        if not re.search(rf"\b{re.escape(entry)}\s*\(", code):
            skipped.append(f"edit {number}: the code does not define {entry}()")
            continue
        edits.append(ParsedEdit(number, description, _strip_line_numbers(code)))
    return edits, skipped


_NUMBERED = re.compile(r"^\s*\d+ \| ?")


def _strip_line_numbers(code: str) -> str:
    """Undo :func:`number_lines` if a model copied the numbers into its answer."""
    lines = code.splitlines()
    if lines and all(_NUMBERED.match(line) for line in lines if line.strip()):
        return "\n".join(_NUMBERED.sub("", line, count=1) for line in lines) + "\n"
    return code


def findings_summary(findings: Sequence[Any]) -> str:
    """Findings as prompt text (uses the diagnosis module's wording when given Finding objects)."""
    from veriforge.optiml.diagnosis import summarize

    return summarize(list(findings))
