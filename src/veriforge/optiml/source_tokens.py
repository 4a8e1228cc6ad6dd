"""Token- and bracket-level reading of comment/string-blanked C text, shared by the edit operators.

Everything works on the text of :func:`veriforge.cuda.evaluate.cleanup.strip_c` (or the source, where
a caller says so) at exact positions, like :mod:`veriforge.optiml.source_scan`. The bracket helpers
take either a string (one character per position) or a list of :class:`Tok` (one token per position),
so a character scanner and a token parser share one implementation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

__all__ = ["ASSIGN_OPS", "PAIRS", "Refuse", "Tok", "apply_edits", "close_of", "fresh_name", "line_indent",
           "statement_after", "tokens", "top_level", "trim_span"]

PAIRS = {"(": ")", "[": "]", "{": "}"}
ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}  # assignment operator tokens
_OPENERS = set(PAIRS)
_CLOSERS = set(PAIRS.values())


class Refuse(Exception):
    """The code is outside what an operator understands: no edit."""


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


class _TokTexts:
    """The texts of a token list, read in place (no copy per call)."""

    __slots__ = ("toks",)

    def __init__(self, toks: Sequence[Tok]) -> None:
        self.toks = toks

    def __len__(self) -> int:
        return len(self.toks)

    def __getitem__(self, k: int) -> str:
        return self.toks[k].text


def _texts(items: str | Sequence[Tok]) -> str | _TokTexts:
    return items if isinstance(items, str) else _TokTexts(items)


def close_of(items: str | Sequence[Tok], open_pos: int, kinds: str = "(", *, typed: bool = False) -> int | None:
    """Position of the bracket that closes the one at ``open_pos`` (None when it never closes).

    Only brackets whose opener is in ``kinds`` count; everything else is skipped. One depth counter
    covers all of them: the answer is the first closer that brings it back to 0 (with several kinds a
    ``)`` may then close a ``[``). ``typed`` instead requires every closer to match the innermost open
    bracket and answers None on a mismatch or a closer with nothing open.
    """
    seq = _texts(items)
    opens = set(kinds)
    closes = {PAIRS[o] for o in kinds}
    depth = 0
    stack: list[str] = []
    for k in range(open_pos, len(seq)):
        x = seq[k]
        if x in opens:
            depth += 1
            stack.append(PAIRS[x])
        elif x in closes:
            if typed and (not stack or stack.pop() != x):
                return None
            depth -= 1
            if depth == 0:
                return k
    return None


def top_level(items: str | Sequence[Tok], start: int, end: int, *, balanced: bool = False) -> Iterator[int]:
    """Positions in ``[start, end)`` outside every ``()``/``[]``/``{}`` pair (the brackets themselves
    excluded), in order. ``balanced``: :class:`Refuse` when a closer has nothing open (checked as far
    as the caller reads)."""
    seq = _texts(items)
    depth = 0
    for k in range(start, end):
        x = seq[k]
        if x in _OPENERS:
            depth += 1
        elif x in _CLOSERS:
            depth -= 1
            if depth < 0 and balanced:
                raise Refuse("unbalanced brackets")
        elif depth == 0:
            yield k


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
