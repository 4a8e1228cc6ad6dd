"""The one reader of CUDA C++ source text: comments, literals, directives, brackets and functions.

Every static scan of a program (the CPU front end, the anti-cheat checks, the task and binding
signature readers, OptiML's edit operators, the CudaPerf rankers) starts from the same two steps:
find what is *not code* (comments, string/char literals, preprocessor lines) and find the
*functions*. Doing either with a local regex gets the corner cases wrong in a different way each
time (a ``//`` inside a string, a digit separator read as a char literal, a raw string, a comment
continued by a backslash, the functions inside ``extern "C" { }``), so they are done once, here.

* :func:`lex` finds the comments and literals: ``//`` comments (continued by a backslash-newline),
  ``/* */``, string and char literals with their encoding prefix (``u8``, ``u``, ``U``, ``L``),
  raw strings ``R"d(...)d"``; a number's digit separators (``1'000'000``) stay code.
* :func:`blank` replaces them with spaces. Offsets are always kept (a position in the result is
  the same position in the source) and so are newlines, unless asked otherwise: ``literals=False``
  keeps the literals' contents (PTX templates); ``splice=True`` also blanks every backslash-newline,
  so a continued line (a multi-line ``#define``) reads as one line (line numbers are then counted in
  the source, see :func:`line_of`); ``squeeze=True`` makes each comment one space (text for reading
  or tokenising, not for positions).
* :func:`blank_directives` blanks preprocessor lines (all, or those of the given names), each with
  its continuation lines.
* :func:`close_of` / :func:`top_level` match brackets in blanked text (or in a token list).
* :func:`functions` lists the function definitions (and optionally declarations) at namespace scope
  of blanked text: qualifiers (``__global__``, ``__device__``, ``__host__``, ``extern "C"``,
  ``template``, ``static``, ...), name, enclosing namespaces, parameter list and body spans.
  ``namespace`` and linkage blocks (``extern "C" { }``) are transparent; other braces (structs,
  initialisers) are skipped whole; a directive inside a declaration does not cut it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PAIRS",
    "FunctionDef",
    "Literal",
    "Refuse",
    "balanced",
    "blank",
    "blank_directives",
    "close_of",
    "directive_spans",
    "enclosing_heads",
    "functions",
    "lex",
    "line_end",
    "line_of",
    "open_of",
    "top_level",
]

PAIRS = {"(": ")", "[": "]", "{": "}"}
_ANGLE_PAIRS = {**PAIRS, "<": ">"}
_OPENERS = set(PAIRS)
_CLOSERS = set(PAIRS.values())

# Where a comment or a literal may start; what a quote is (literal, raw string, digit separator) is
# decided from the token before it.
_START = re.compile(r"//|/\*|[\"']")
_RAW_PREFIXES = {"R", "u8R", "uR", "UR", "LR"}
_RAW_OPEN = re.compile(r"([^\s()\\\"]{0,16})\(")
_STRING_BODY = {'"': re.compile(r'(?:\\[\s\S]|[^"\\\n])*'), "'": re.compile(r"(?:\\[\s\S]|[^'\\\n])*")}
_CONTINUATION = re.compile(r"\\\r?\n")
_BRACES = re.compile(r"[{}]")
_BOUNDARY = re.compile(r"[;{}]")
_NOT_NEWLINE = re.compile(r"[^\n]")


class Refuse(Exception):
    """The text is outside what a reader (or an edit built on it) understands: no answer, no edit."""


@dataclass(frozen=True)
class Literal:
    """A comment or a literal: ``kind`` is ``comment``, ``string``, ``char`` or ``raw``; ``start:end``
    is all of it, ``body`` what is blanked (a comment whole; a literal between its quotes)."""

    kind: str
    start: int
    end: int
    body: tuple[int, int]


def line_end(src: str, pos: int) -> int:
    """End (the ``\\n`` or the text's end) of the line holding ``pos``, continued over every
    backslash-newline: where a ``//`` comment or a preprocessor directive starting there ends."""
    n = len(src)
    while True:
        eol = src.find("\n", pos)
        if eol < 0:
            return n
        if eol > 0 and (src[eol - 1] == "\\" or (src[eol - 1] == "\r" and src[eol - 2:eol - 1] == "\\")):
            pos = eol + 1
            continue
        return eol


def _token_before(src: str, pos: int) -> str:
    """The identifier or number (with its ``.`` and ``'``) that ends right before ``pos``."""
    start = pos
    while start > 0 and (src[start - 1].isalnum() or src[start - 1] in "_.'"):
        start -= 1
    return src[start:pos]


def lex(src: str) -> list[Literal]:
    """Every comment and literal of ``src``, in order (unterminated ones run to the end of their
    line, a block comment or raw string to the end of the text)."""
    out: list[Literal] = []
    pos, n = 0, len(src)
    while pos < n:
        m = _START.search(src, pos)
        if m is None:
            break
        start, tok = m.start(), m.group()
        if tok == "//":
            end = line_end(src, start)
            out.append(Literal("comment", start, end, (start, end)))
        elif tok == "/*":
            close = src.find("*/", start + 2)
            end = n if close < 0 else close + 2
            out.append(Literal("comment", start, end, (start, end)))
        else:
            before = _token_before(src, start)
            if tok == "'" and (before[:1].isdigit() or (before[:1] == "." and before[1:2].isdigit())):
                pos = start + 1  # a digit separator: 1'000'000, 0x1'F
                continue
            raw = _RAW_OPEN.match(src, start + 1) if tok == '"' and before in _RAW_PREFIXES else None
            if raw is not None:
                delim = raw.group(1)
                close = src.find(")" + delim + '"', raw.end())
                end = n if close < 0 else close + len(delim) + 2
                out.append(Literal("raw", start - len(before), end, (start + 1, end - 1 if close >= 0 else n)))
            else:
                body = _STRING_BODY[tok].match(src, start + 1).end()
                end = body + 1 if body < n and src[body] == tok else body
                out.append(Literal("string" if tok == '"' else "char", start, end, (start + 1, body)))
        pos = end
    return out


def blank(src: str, *, literals: bool = True, splice: bool = False, squeeze: bool = False) -> str:
    """``src`` with every comment and (``literals``) the contents of every literal replaced by spaces.

    Quotes and encoding prefixes stay (``"   "``, ``R"      "``) so a reader still sees that a
    literal is there. Offsets and newlines are kept, except: ``splice`` blanks every
    backslash-newline too (a continued line reads as one; count lines in ``src``), ``squeeze`` makes
    each comment a single space (offsets are then lost: for tokenising and reading only).
    """
    parts: list[str] = []
    pos = 0
    for lit in lex(src):
        if lit.kind != "comment" and not literals:
            continue
        a, b = lit.body
        parts.append(src[pos:a])
        parts.append(" " if squeeze and lit.kind == "comment" else _spaces(src, a, b))
        pos = b
    parts.append(src[pos:])
    out = "".join(parts)
    if splice and not squeeze:
        out = _CONTINUATION.sub(lambda m: " " * len(m.group()), out)
    return out


def _spaces(src: str, a: int, b: int) -> str:
    """``src[a:b]`` as spaces, its newlines kept."""
    return " " * (b - a) if src.find("\n", a, b) < 0 else _NOT_NEWLINE.sub(" ", src[a:b])


def line_of(text: str, pos: int) -> int:
    """1-based line of ``pos`` (count in the source, or in blanked text that kept its newlines)."""
    return text.count("\n", 0, pos) + 1


_DIRECTIVE = re.compile(r"^[^\S\n]*#[^\S\n]*(\w*)", re.M)


def directive_spans(text: str, names: Sequence[str] | None = None) -> Iterator[tuple[int, int, str]]:
    """``(start, end, name)`` of each preprocessor line (with its continuation lines) of blanked
    ``text``; only the directives in ``names`` when given (``"include"``, ``"define"``, ...)."""
    pos = 0
    while True:
        m = _DIRECTIVE.search(text, pos)
        if m is None:
            return
        end = line_end(text, m.start())  # a directive continues like a // comment does
        if names is None or m.group(1) in names:
            yield m.start(), end, m.group(1)
        pos = max(end, m.end())


def blank_directives(text: str, names: Sequence[str] | None = None) -> str:
    """``text`` with its preprocessor lines (all, or those in ``names``) blanked, newlines kept."""
    parts: list[str] = []
    pos = 0
    for a, b, _ in directive_spans(text, names):
        parts.append(text[pos:a])
        parts.append(_spaces(text, a, b))
        pos = b
    parts.append(text[pos:])
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# Brackets


class _TokTexts:
    """The texts of a token list (anything with ``.text``), read in place (no copy per call)."""

    __slots__ = ("toks",)

    def __init__(self, toks: Sequence[Any]) -> None:
        self.toks = toks

    def __len__(self) -> int:
        return len(self.toks)

    def __getitem__(self, k: int) -> str:
        return self.toks[k].text


def _texts(items: str | Sequence[Any]) -> str | Sequence[str] | _TokTexts:
    if isinstance(items, str) or not items or isinstance(items[0], str):
        return items  # text, or a list of token texts
    return _TokTexts(items)


def close_of(items: str | Sequence[Any], open_pos: int, kinds: str = "(", *, typed: bool = False) -> int | None:
    """Position of the bracket that closes the one at ``open_pos`` (None when it never closes).

    ``items`` is blanked text (one character per position) or a token list (one token per
    position: strings, or anything with ``.text``). Only brackets whose opener is in ``kinds`` count
    (``<`` too when asked for: template and cast brackets in a token list); one depth
    counter covers all of them: the answer is the first closer that brings it back to 0 (with several
    kinds a ``)`` may then close a ``[``). ``typed`` instead requires every closer to match the
    innermost open bracket and answers None on a mismatch or a closer with nothing open.
    """
    seq = _texts(items)
    opens = set(kinds)
    closes = {_ANGLE_PAIRS[o] for o in kinds}
    depth = 0
    stack: list[str] = []
    for k in range(open_pos, len(seq)):
        x = seq[k]
        if x in opens:
            depth += 1
            stack.append(_ANGLE_PAIRS[x])
        elif x in closes:
            if typed and (not stack or stack.pop() != x):
                return None
            depth -= 1
            if depth == 0:
                return k
    return None


def open_of(items: str | Sequence[Any], close_pos: int, kinds: str = "(", lo: int = 0) -> int | None:
    """Position of the bracket that the closer at ``close_pos`` closes, searching back to ``lo``
    (None when it is not there); ``items`` and ``kinds`` as for :func:`close_of`."""
    seq = _texts(items)
    closes = {_ANGLE_PAIRS[o] for o in kinds}
    opens = set(kinds)
    depth = 0
    for k in range(close_pos, lo - 1, -1):
        x = seq[k]
        if x in closes:
            depth += 1
        elif x in opens:
            depth -= 1
            if depth == 0:
                return k
    return None


def top_level(items: str | Sequence[Any], start: int, end: int, *, balanced: bool = False) -> Iterator[int]:
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


def balanced(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether the braces of blanked ``text[start:end]`` balance (no ``}`` without its ``{``)."""
    depth = 0
    for m in _BRACES.finditer(text, start, len(text) if end is None else end):
        depth += 1 if m.group() == "{" else -1
        if depth < 0:
            return False
    return depth == 0


# ---------------------------------------------------------------------------------------------
# Functions


@dataclass(frozen=True)
class FunctionDef:
    """A function definition (or, when asked for, a declaration) at namespace scope.

    Positions are into the text given to :func:`functions`: ``start`` is the first character of the
    declaration (``template``, qualifiers, return type), ``name_start`` the name's, ``params`` the
    positions of ``(`` and ``)`` of the parameter list and ``body`` those of ``{`` and ``}`` (None for
    a declaration; the text's end for a body that never closes).
    """

    name: str
    start: int
    name_start: int
    params: tuple[int, int]
    body: tuple[int, int] | None
    qualifiers: frozenset[str]
    namespace: tuple[str, ...] = ()

    @property
    def kernel(self) -> bool:
        return "__global__" in self.qualifiers

    @property
    def device(self) -> bool:
        """``__device__`` and not ``__global__`` (``__host__ __device__`` included)."""
        return "__device__" in self.qualifiers and not self.kernel

    @property
    def extern_c(self) -> bool:
        return 'extern "C"' in self.qualifiers

    @property
    def qualified_name(self) -> str:
        return "::".join([*self.namespace, self.name])

    def head(self, text: str) -> str:
        """The declaration up to the body (or the ``;``)."""
        return text[self.start:self.body[0] if self.body else self.params[1] + 1]


_QUALIFIER_WORDS = {"__global__", "__device__", "__host__", "__forceinline__", "__noinline__", "static", "inline",
                    "__inline__", "extern", "constexpr", "virtual", "explicit", "template", "friend"}
_NOT_A_NAME = {"if", "for", "while", "switch", "return", "sizeof", "decltype", "alignas", "alignof", "typeof",
               "__attribute__", "__launch_bounds__", "__declspec", "__align__", "__maxnreg__", "__cluster_dims__",
               "noexcept", "throw", "static_assert", "catch", "operator"}
_TRANSPARENT = re.compile(r'(?:\bextern\s*"[^"\n]*"|\b(?:inline\s+)?namespace(?:\s+([\w:]+))?'
                          r"(?:\s*__attribute__\s*\(\(.*?\)\))?)\s*$", re.S)
_LINKAGE_C = re.compile(r'\bextern\s*"(?:C| )"')
_TRAILING_RETURN = re.compile(r"\)\s*(?:const\s*|noexcept\s*)*->[\w\s:<>,*&]*$")
_TRAILER_WORDS = ("const", "volatile", "noexcept", "override", "final", "mutable", "&&", "&")
_NAME = re.compile(r"(?:(operator\s*(?:\(\s*\)|\[\s*\]|new\b|delete\b|[^\w\s()]+))|(~?[A-Za-z_]\w*))"
                   r"\s*(?:<[^<>;{}()]*>\s*)?$")
_PREFIX_JUNK = re.compile(r"[=+\-/%!?.;{}\[\]]|(?<!:):(?!:)|\b(?:return|typedef|using)\b")


def enclosing_heads(text: str, pos: int) -> list[str]:
    """The text before each ``{`` that encloses ``pos`` in blanked ``text``, outermost first: a
    function's declarator with its qualifiers, ``struct S``, ``namespace n``, ``extern " "``, a
    lambda's ``[&](int i)``, ``if (c)``. Each head starts after the previous ``;``, ``{`` or ``}``.
    Used to tell where a statement is compiled (inside a ``__global__``/``__device__`` function,
    a lambda in one, or host code) without parsing the statement itself."""
    stack: list[int] = []
    for m in _BRACES.finditer(text, 0, pos):
        if m.group() == "{":
            stack.append(m.start())
        elif stack:
            stack.pop()
    heads = []
    for brace in stack:
        start = max(text.rfind(";", 0, brace), text.rfind("}", 0, brace), text.rfind("{", 0, brace))
        heads.append(text[start + 1:brace])
    return heads


def _close_brace(code: str, at: int, end: int) -> int:
    """The ``}`` closing the ``{`` at ``at`` inside ``code[:end]`` (``end`` when it never closes)."""
    depth = 0
    for m in _BRACES.finditer(code, at, end):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return m.start()
    return end


def _params_close(code: str, lo: int, hi: int) -> int:
    """The ``)`` that ends a declarator's parameter list in ``code[lo:hi]`` before its trailing
    qualifiers (``const``, ``noexcept(...)``, ``__attribute__((...))``, ``-> T``); -1 when none."""
    trailing = _TRAILING_RETURN.search(code, lo, hi)
    k = trailing.start() + 1 if trailing else hi
    while True:
        while k > lo and code[k - 1].isspace():
            k -= 1
        if k <= lo:
            return -1
        word = next((w for w in _TRAILER_WORDS if code.startswith(w, k - len(w))
                     and (not w[0].isalpha() or k - len(w) == lo or not (code[k - len(w) - 1].isalnum()
                                                                        or code[k - len(w) - 1] == "_"))), None)
        if word is not None:
            k -= len(word)
            continue
        if code[k - 1] != ")":
            return -1
        open_pos = open_of(code, k - 1, "(", lo)
        if open_pos is None:
            return -1
        trailer = re.search(r"\b(?:noexcept|throw|__attribute__)\s*$", code[lo:open_pos])
        if trailer is not None:
            k = lo + trailer.start()
            continue
        return k - 1


def _declarator(code: str, lo: int, hi: int) -> tuple[str, int, int, int, str] | None:
    """``(name, name start, '(' position, ')' position, prefix)`` of a function declarator spanning
    ``code[lo:hi]`` (the text before its ``{`` or ``;``), or None when it is not one."""
    close = _params_close(code, lo, hi)
    if close < 0:
        return None
    open_pos = open_of(code, close, "(", lo)
    if open_pos is None:
        return None
    m = _NAME.search(code, lo, open_pos)
    if m is None:
        return None
    name = re.sub(r"\s+", "", m.group(1)) if m.group(1) else m.group(2)
    if name in _NOT_A_NAME:
        return None
    prefix = code[lo:m.start()]
    flat = prefix
    while True:  # attribute / launch-bounds / alignas argument lists, template argument lists
        shorter = re.sub(r"\([^()]*\)|<[^<>]*>|\[\[[^\[\]]*\]\]", " ", flat)
        if shorter == flat:
            break
        flat = shorter
    if _PREFIX_JUNK.search(flat) or "(" in flat or ")" in flat:
        return None
    return name, m.start(), open_pos, close, prefix


def functions(text: str, start: int = 0, end: int | None = None, *, declarations: bool = False) -> list[FunctionDef]:
    """Function definitions at namespace scope of blanked ``text[start:end]`` (with ``declarations``
    also the declarations ``T f(...);``), in order. See :class:`FunctionDef`."""
    end = len(text) if end is None else end
    code = text[:start] + blank_directives(text[start:end]) + text[end:] if start or end < len(text) \
        else blank_directives(text)
    out: list[FunctionDef] = []
    _scope(code, start, end, (), False, declarations, out)
    return out


def _scope(code: str, start: int, end: int, namespace: tuple[str, ...], extern_c: bool, declarations: bool,
           out: list[FunctionDef]) -> None:
    head = pos = start
    while True:
        m = _BOUNDARY.search(code, pos, end)
        if m is None:
            return
        at, ch = m.start(), m.group()
        if ch == "{":
            close = _close_brace(code, at, end)
            ns = _TRANSPARENT.search(code, head, at)
            if ns is not None:
                inner = (*namespace, ns.group(1)) if ns.group(1) else namespace
                c_block = extern_c or bool(_LINKAGE_C.search(code, ns.start(), at))
                _scope(code, at + 1, close, inner, c_block, declarations, out)
            else:
                fn = _function(code, head, at, (at, close), namespace, extern_c)
                if fn is not None:
                    out.append(fn)
            head = pos = close + 1
            continue
        if ch == ";" and declarations:
            fn = _function(code, head, at, None, namespace, extern_c)
            if fn is not None:
                out.append(fn)
        head = pos = at + 1


def _function(code: str, lo: int, hi: int, body: tuple[int, int] | None, namespace: tuple[str, ...],
              extern_c: bool) -> FunctionDef | None:
    while lo < hi and code[lo].isspace():
        lo += 1
    found = _declarator(code, lo, hi)
    if found is None:
        return None
    name, name_start, open_pos, close, prefix = found
    words = set(re.findall(r"[A-Za-z_]\w*", re.sub(r"\([^()]*\)", " ", prefix)))
    quals = {w for w in words if w in _QUALIFIER_WORDS}
    if extern_c or _LINKAGE_C.search(prefix):
        quals.add('extern "C"')
    return FunctionDef(name, lo, name_start, (open_pos, close), body, frozenset(quals), namespace)
