"""Token- and bracket-level reading of comment/string-blanked C text, shared by the edit operators.

Everything works on the text of :func:`veriforge.cuda.source_reader.blank` (or the source, where
a caller says so) at exact positions, like :mod:`veriforge.optiml.source_scan`. The bracket helpers
(:func:`close_of`, :func:`top_level`, from the reader) take either a string (one character per
position) or a list of :class:`Tok` (one token per position), so a character scanner and a token
parser share one implementation; :class:`Refuse` (no edit) is the reader's too.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass

from veriforge.cuda.source_reader import PAIRS, Refuse, close_of, top_level

__all__ = ["ASSIGN_OPS", "PAIRS", "Refuse", "Tok", "apply_edits", "close_of", "dedented", "fresh_name",
           "indent_lines", "line_indent", "statement_after", "tokens", "top_level", "trim_span"]

ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}  # assignment operator tokens


@dataclass(frozen=True)
class Tok:
    kind: str  # id | num | op | pp
    text: str
    start: int
    end: int


_TOKEN = re.compile(
    r"(?P<ws>\s+)|(?P<pp>#[^\n]*)"
    r"|(?P<num>0[xX][0-9a-fA-F]+[uUlL]*|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fFuUlL]*)"
    r"|(?P<id>[A-Za-z_]\w*)"
    r"|(?P<op><<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||\+=|-=|\*=|/=|%=|&=|\|=|\^=|::|[-+*/%<>=!~&|^?:;,.()\[\]{}])"
)


def tokens(text: str, start: int, end: int) -> list[Tok]:
    """The C tokens of ``text[start:end]`` (whitespace dropped, a preprocessor line is one ``pp`` token);
    :class:`Refuse` on a character no token starts with (a quote of a blanked literal, ``@``, ...)."""
    out: list[Tok] = []
    pos = start
    while pos < end:
        m = _TOKEN.match(text, pos, end)
        if not m:
            raise Refuse(f"unexpected character {text[pos]!r}")
        kind = m.lastgroup or "ws"
        if kind != "ws":
            out.append(Tok(kind, m.group(0), m.start(), m.end()))
        pos = m.end()
    return out


def trim_span(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """``span`` without the whitespace at either end."""
    a, b = span
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def statement_after(text: str, pos: int) -> str:
    """The statement that starts after the whitespace at ``pos``: a ``{...}`` block or text up to ``;``."""
    k = pos
    while k < len(text) and text[k].isspace():
        k += 1
    if k < len(text) and text[k] == "{":
        end = close_of(text, k, "{")
        return text[k:] if end is None else text[k:end + 1]
    end = text.find(";", k)
    return text[k:end + 1] if end >= 0 else text[k:]


def line_indent(source: str, pos: int, lines: str | None = None) -> str:
    """The blanks that start the line holding ``pos`` in ``source``; the line start is looked up in
    ``lines`` when given (the blanked text: a line continuation there is no line break)."""
    start = (source if lines is None else lines).rfind("\n", 0, pos) + 1
    rest = source[start:]
    return rest[:len(rest) - len(rest.lstrip(" \t"))]


def dedented(source: str, span: tuple[int, int], text: str | None = None) -> str:
    """The statements of ``span`` (or ``text``, an edited copy of them) as lines without their common
    indentation: the indentation of the span's first line counts when the span starts mid-line after
    blanks, leading and trailing blank lines go (for moving a body into a new block)."""
    first_line = source[source.rfind("\n", 0, span[0]) + 1:span[0]]
    text = (first_line if not first_line.strip() else "") + (source[span[0]:span[1]] if text is None else text)
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return textwrap.dedent("\n".join(lines))


def indent_lines(block: str, prefix: str) -> str:
    """``block`` with ``prefix`` before every line that is not blank (blank lines become empty)."""
    return "\n".join(prefix + line if line.strip() else "" for line in block.split("\n"))


def fresh_name(text: str, want: str, taken: set[str] | None = None, *, numbered: bool = False,
               prefix: bool = False) -> str:
    """``want``, or the first variant of it that ``text`` does not use and ``taken`` does not hold
    (the choice is added to ``taken``).

    Variants append underscores (``want_``, ``want__``, ...) or, ``numbered``, a counter (``want2``,
    ``want3``, ...). A name is used when it is an identifier of ``text``, or with ``prefix`` when some
    identifier starts with it (so the names derived from it, ``{name}_t``, ..., are free too).
    """
    end = "" if prefix else r"\b"
    name, k = want, 2
    while re.search(rf"\b{re.escape(name)}{end}", text) or name in (taken or ()):
        if numbered:
            name, k = f"{want}{k}", k + 1
        else:
            name += "_"
    if taken is not None:
        taken.add(name)
    return name


def apply_edits(source: str, edits: Iterable[tuple[int, int, str]], *, stable: bool = False,
                disjoint: bool = False) -> str:
    """``source`` with every ``(start, end, text)`` replacement made, right to left so none shifts another.

    Edits of one span are applied in descending text order (insertions at one point end up in text
    order), or with ``stable`` in the order given (the one given later ends up first). ``disjoint``:
    ValueError when spans overlap; otherwise overlapping edits are made as they come.
    """
    order = sorted(edits, key=lambda x: (x[0], x[1]), reverse=True) if stable else sorted(edits, reverse=True)
    out, last = source, len(source) + 1
    for s, e, text in order:
        if disjoint and e > last:
            raise ValueError("overlapping edits")
        out = out[:s] + text + out[e:]
        last = s
    return out
