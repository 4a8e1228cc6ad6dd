"""Compiler messages → :class:`Diagnostic` objects that point at the user's file and line.

nvcc compiles a copy of the source in a private temporary directory, so its messages name that
copy. They come in three shapes, all handled here:

* the CUDA front end (cudafe++): ``kernel.cu(12): error: identifier "x" is undefined`` followed
  by the echoed (preprocessed) source line and a ``^`` caret that gives the column, and maybe
  ``detected during instantiation of ...`` notes;
* the host preprocessor (gcc/clang): ``kernel.cu:4:10: fatal error: nothere.h: No such file``;
* tool-level lines without a position: ``ptxas error   : Entry function '_Z3bigPf' uses too much
  shared data`` and ``nvcc fatal   : ...`` (ptxas errors about an entry function are pinned to
  the line that defines the kernel, found in the source).

Columns are recomputed against the user's original line, because the echoed line is the
*preprocessed* one (``__global__`` shows up as ``__attribute__((global))``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.errors import CompileError

_FRONTEND = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<sev>error|warning|remark|catastrophic error|note)"
    r"(?: #(?P<code>[\w-]+))?: (?P<msg>.*)$"
)
_GCC = re.compile(
    r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning|note): "
    r"(?P<msg>.*)$"
)
_TOOL = re.compile(r"^(?P<tool>ptxas|nvcc|nvlink|fatbinary|cicc)\s+(?P<sev>error|fatal|warning)\s*: (?P<msg>.*)$")
_INSTANTIATION = re.compile(r"^\s+detected during")
_QUOTED_MANGLED = re.compile(r"'(_Z\w+)'")
_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One compiler message. ``line``/``column`` are 1-based; None when the tool gave no position."""

    file: str | None
    line: int | None
    column: int | None
    severity: str
    message: str
    code: str | None = None
    notes: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            where += ": "
        text = f"{where}{self.severity}: {self.message}"
        if self.notes:
            text += "".join(f"\n    {n}" for n in self.notes)
        return text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["notes"] = list(self.notes)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnostic:
        values = dict(data)
        values["notes"] = tuple(values.get("notes", ()))
        return cls(**values)


class NvccCompileError(CompileError):
    """nvcc/ptxas rejected the source. ``diagnostics`` point at the user's file; ``log`` is everything."""

    def __init__(
        self,
        message: str,
        diagnostics: list[Diagnostic] | None = None,
        log: str = "",
        *,
        command: list[str] | None = None,
        returncode: int | None = None,
    ) -> None:
        super().__init__(message, diagnostics, log)
        self.command = list(command or [])
        self.returncode = returncode

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity in ("error", "fatal")]


class CompileTimeoutError(NvccCompileError):
    """nvcc ran past its time limit and was killed (pathological templates, huge unrolls)."""


@dataclass(slots=True)
class PathMap:
    """How to turn the paths nvcc printed into the names the user knows."""

    user_file: str
    aliases: tuple[str, ...]  # every spelling of the temporary copy
    source_lines: list[str] = field(default_factory=list)

    def map(self, file: str) -> str:
        cleaned = file.strip().strip('"')
        if cleaned in self.aliases:
            return self.user_file
        return cleaned

    def is_user(self, file: str) -> bool:
        return file == self.user_file

    def line_of(self, file: str, lineno: int) -> str | None:
        """Text of line ``lineno`` of ``file`` (the user's source, or a header on disk), if known."""
        if self.is_user(file):
            lines = self.source_lines
        else:
            try:
                lines = Path(file).read_text(errors="replace").splitlines()
            except OSError:
                return None
        return lines[lineno - 1] if 0 < lineno <= len(lines) else None


def _column_from_caret(echo: str, caret: str, original: str | None) -> int | None:
    """Column (1-based) in the user's original line of the token the caret points at."""
    pos = caret.find("^")
    if pos < 0:
        return None
    if original is None:
        return None
    # nvcc indents the echoed line by two spaces; the caret line shares that indent.
    indent = 2 if echo.startswith("  ") else 0
    echoed = echo[indent:]
    at = pos - indent
    if echoed.rstrip() == original.rstrip():
        return at + 1
    # The echo is preprocessed: find the same token (same occurrence index) in the original.
    m = _IDENT.match(echoed, at) if 0 <= at < len(echoed) else None
    token = m.group(0) if m else echoed[at : at + 1]
    if not token.strip():
        return None
    occurrence = echoed[:at].count(token)
    start = -1
    for _ in range(occurrence + 1):
        start = original.find(token, start + 1)
        if start < 0:
            break
    if start < 0:
        start = original.find(token)
    return start + 1 if start >= 0 else None


def _kernel_line(source_lines: list[str], mangled_or_name: str, demangled: str | None) -> int | None:
    """The line that defines a kernel, for ptxas messages that only name the function."""
    from veriforge.cuda.toolchain.demangle import base_name

    name = base_name(demangled) if demangled else mangled_or_name
    name = name.rsplit("::", 1)[-1]
    pattern = re.compile(rf"\b{re.escape(name)}\s*(<[^;{{]*>)?\s*\(")
    for i, text in enumerate(source_lines):
        if "__global__" in text and pattern.search(text):
            return i + 1
    for i, text in enumerate(source_lines):
        if pattern.search(text) and not text.rstrip().endswith(";"):
            return i + 1
    return None


def parse_nvcc_log(log: str, paths: PathMap, demangled: dict[str, str] | None = None) -> list[Diagnostic]:
    """Every error/warning in an nvcc log, in order, with positions mapped to the user's file."""
    lines = log.splitlines()
    out: list[Diagnostic] = []
    demangled = demangled or {}
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r")
        if m := _FRONTEND.match(line):
            file = paths.map(m.group("file"))
            lineno = int(m.group("line"))
            sev = "error" if m.group("sev") == "catastrophic error" else m.group("sev")
            msg = m.group("msg").strip()
            column = None
            notes: list[str] = []
            j = i + 1
            # Echoed source line + caret, then optional "detected during ..." notes.
            if j + 1 < len(lines) and lines[j + 1].strip() == "^":
                original = paths.line_of(file, lineno)
                column = _column_from_caret(lines[j], lines[j + 1], original)
                j += 2
            while j < len(lines) and _INSTANTIATION.match(lines[j]):
                note = lines[j].strip()
                for alias in paths.aliases:
                    note = note.replace(f'"{alias}"', f'"{paths.user_file}"')
                notes.append(note)
                j += 1
            out.append(Diagnostic(file, lineno, column, sev, msg, m.group("code"), tuple(notes)))
            i = j
            continue
        if m := _GCC.match(line):
            sev = "error" if m.group("sev") == "fatal error" else m.group("sev")
            col = int(m.group("col")) if m.group("col") else None
            out.append(Diagnostic(paths.map(m.group("file")), int(m.group("line")), col, sev, m.group("msg").strip()))
            i += 1
            continue
        if m := _TOOL.match(line):
            sev = "warning" if m.group("sev") == "warning" else "error"
            msg = m.group("msg").strip()
            file: str | None = None
            lineno_opt: int | None = None
            if mm := _QUOTED_MANGLED.search(msg):
                mangled = mm.group(1)
                nice = demangled.get(mangled)
                if nice:
                    msg = msg.replace(f"'{mangled}'", f"'{nice}'")
                lineno_opt = _kernel_line(paths.source_lines, mangled, nice)
                if lineno_opt is not None:
                    file = paths.user_file
            elif m.group("tool") == "ptxas":
                file = paths.user_file
            out.append(Diagnostic(file, lineno_opt, None, sev, f"{m.group('tool')}: {msg}"))
            i += 1
            continue
        i += 1
    return out


def remap_log(log: str, paths: PathMap) -> str:
    """The raw log with the temporary file's name replaced by the user's."""
    text = log
    for alias in sorted(paths.aliases, key=len, reverse=True):
        if alias and alias != paths.user_file:
            text = re.sub(rf"(?<![\w/.-]){re.escape(alias)}(?=[(:\"])", paths.user_file, text)
    return text


def error_summary(diagnostics: list[Diagnostic], log: str) -> str:
    """The first error as one line (the exception message), or the log's last line."""
    for d in diagnostics:
        if d.severity == "error":
            return str(d).split("\n")[0]
    tail = [line for line in log.strip().splitlines() if line.strip()]
    return tail[-1] if tail else "nvcc failed without output"
