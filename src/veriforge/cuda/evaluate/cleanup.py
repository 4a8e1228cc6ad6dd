"""Source text with comments and string/char literals blanked out (positions preserved).

Static anti-cheat scans must not be fooled by a forbidden word in a comment (false positive) or
miss one hidden behind a line continuation (false negative); blanking keeps line numbers right.
"""

from __future__ import annotations

import re

__all__ = ["function_bodies", "line_of", "strip_c"]

_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def strip_c(source: str, keep_strings: bool = False) -> str:
    """Comments → spaces; string and char literals → ``""`` / ``''`` padded with spaces."""
    source = source.replace("\\\n", "  ")

    def blank(m: re.Match[str]) -> str:
        text = m.group(0)
        if text.startswith("/"):
            return re.sub(r"[^\n]", " ", text)
        if keep_strings:
            return text
        return text[0] + " " * (len(text) - 2) + text[-1]

    return _TOKEN.sub(blank, source)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def function_bodies(text: str) -> list[tuple[str, str, str, int]]:
    """Top-level function definitions in stripped C/C++ ``text``: (name, header, body, line).

    A definition is a ``{`` at brace depth 0 preceded by ``)`` (optionally ``const``/``noexcept``);
    the header is the text since the previous ``;``, ``}`` or preprocessor line.
    """
    out = []
    depth = 0
    i = 0
    n = len(text)
    last_end = 0
    while i < n:
        ch = text[i]
        if ch == "{":
            if depth == 0:
                head = text[last_end:i]
                if re.search(r'(extern\s*""|namespace(\s+[\w:]+)?)\s*$', head):
                    last_end = i + 1  # transparent block: its functions are top-level
                    i += 1
                    continue
                stripped = re.sub(r"\b(const|noexcept|override)\b\s*$", "", head.rstrip()).rstrip()
                j, d = i + 1, 1
                while j < n and d:
                    d += {"{": 1, "}": -1}.get(text[j], 0)
                    j += 1
                if stripped.endswith(")"):
                    m = re.search(r"([A-Za-z_]\w*)\s*\($", _header_name_part(stripped))
                    name = m.group(1) if m else ""
                    lines = [ln for ln in head.splitlines() if not ln.lstrip().startswith("#")]
                    out.append((name, "\n".join(lines), text[i + 1: j - 1], line_of(text, i)))
                    i = j
                    last_end = j
                    continue
                depth = 1
            else:
                depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
            if depth == 0:
                last_end = i + 1
        elif ch == ";" and depth == 0:
            last_end = i + 1
        elif ch == "#" and depth == 0:
            eol = text.find("\n", i)
            eol = n if eol < 0 else eol
            i = eol
            last_end = eol
            continue
        i += 1
    return out


def _header_name_part(header: str) -> str:
    """The header up to the opening parenthesis of the parameter list (matching the last ``)``)."""
    depth = 0
    for k in range(len(header) - 1, -1, -1):
        c = header[k]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return header[: k + 1]
    return header
