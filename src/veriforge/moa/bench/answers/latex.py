r"""MATH answers: the last ``\boxed{...}`` (nested braces, ``\boxed 5``, ``\fbox``) and equivalence.

Equivalence is decided in three steps, each only when the previous could not decide:

1. **String normalisation** (always): drop ``$``, ``\left``/``\right``, spacing commands, ``\text{units}``,
   ``^\circ``, a leading ``x =``, a trailing period; ``\dfrac``/``\tfrac`` → ``\frac``; ``\frac12`` →
   ``\frac{1}{2}``; ``\sqrt3`` → ``\sqrt{3}``; ``0.50`` → ``0.5``. Equal strings are equal answers.
2. **Exact numbers** (always): both sides that are plain rationals (``1/2``, ``0.5``, ``\frac{1}{2}``,
   ``-\frac{3}{4}``) are compared as fractions.
3. **Symbolic** (only if ``sympy`` is installed): a small LaTeX→sympy translation (``\frac``,
   ``\sqrt``, ``\sqrt[n]``, ``\pi``, ``\cdot``, ``^``, implicit products) and ``simplify(a - b) == 0``,
   else numeric agreement to 1e-9 relative. Text reaches ``sympy.parse_expr`` (which evaluates Python)
   only after a whitelist check — digits, operators, brackets, single-letter symbols and the names
   ``sqrt``/``pi`` — and exponents above 1000 are refused, so model output cannot run code or hang it.

Tuples/intervals/lists (``(1, 2)``, ``[0, \infty)``) compare component-wise by the same rules, with
matching bracket types.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["extract_boxed", "latex_equal", "normalize_latex"]

_BOX_START = re.compile(r"\\(?:boxed|fbox)\s*")


def _boxed_contents(text: str) -> list[str]:
    out: list[str] = []
    for m in _BOX_START.finditer(text):
        i = m.end()
        if i < len(text) and text[i] == "{":
            depth, j = 0, i
            while j < len(text):
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        out.append(text[i + 1 : j])
                        break
                j += 1
        else:  # "\boxed 5" — the next token up to whitespace, "$" or end
            tail = re.match(r"\s*([^\s$]+)", text[m.end() :])
            if tail:
                out.append(tail.group(1))
    return out


def extract_boxed(text: str) -> str | None:
    """Contents of the last ``\\boxed{}``/``\\fbox{}`` in ``text`` (braces balanced), else ``None``."""
    found = _boxed_contents(text)
    return found[-1].strip() if found else None


_TEXT_CMD = re.compile(r"\\(?:text|textbf|mathrm|mbox)\{([^{}]*)\}")
_UNITS = re.compile(
    r"\\(?:text|mbox|mathrm)\{\s*(?:cm|m|km|inches|inch|feet|foot|ft|units?|degrees?|dollars?|cents?|"
    r"meters?|hours?|minutes?|seconds?|days?|square units|sq units)\s*\}(\^\{?\d\}?)?"
)


def normalize_latex(text: str) -> str:
    """The canonical string form of a MATH answer (see the module docstring, step 1)."""
    s = text.strip()
    s = s.replace("$", "").replace("\n", " ")
    s = re.sub(r"\\(?:left|right)\b", "", s)
    s = re.sub(r"\\[,;:! ]|\\quad|\\qquad", "", s)
    s = _UNITS.sub("", s)
    s = re.sub(r"\^\s*\{?\\circ\}?|°|\\degree", "", s)
    s = _TEXT_CMD.sub(r"\1", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\displaystyle", "")
    s = re.sub(r"\\frac\s*(\d)\s*(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac\s*\{([^{}]*)\}\s*(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac\s*(\d)\s*\{", r"\\frac{\1}{", s)
    s = re.sub(r"\\sqrt\s*(\d+|[a-z])", r"\\sqrt{\1}", s)
    s = re.sub(r"^\s*[a-zA-Z]\s*=\s*(?!.*=)", "", s)  # "x = 5" → "5" (not "x = y = 5")
    s = s.replace(" ", "").rstrip(".")
    s = re.sub(r"(\d),(\d{3})(?!\d)", r"\1\2", s) if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", s) else s
    if re.fullmatch(r"-?\d+\.\d*", s):
        s = s.rstrip("0").rstrip(".") or "0"
    return s


_FRAC = re.compile(r"(-?)\\frac\{(-?\d+)\}\{(-?\d+)\}")


def _as_fraction(s: str) -> Fraction | None:
    m = _FRAC.fullmatch(s)
    try:
        if m:
            value = Fraction(int(m.group(2)), int(m.group(3)))
            return -value if m.group(1) else value
        if re.fullmatch(r"-?\d+(?:\.\d+)?(?:/\d+)?|-?\.\d+", s):
            return Fraction(s)
    except (ValueError, ZeroDivisionError):
        return None
    return None


def _split_tuple(s: str) -> tuple[str, list[str], str] | None:
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]" and "," in s:
        parts, depth, cur = [], 0, ""
        for ch in s[1:-1]:
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        return s[0], parts, s[-1]
    return None


def latex_equal(a: str, b: str) -> bool:
    """Whether two MATH answers are equal (see the module docstring); never raises."""
    na, nb = normalize_latex(a), normalize_latex(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    ta, tb = _split_tuple(na), _split_tuple(nb)
    if ta or tb:
        if not (ta and tb) or ta[0] != tb[0] or ta[2] != tb[2] or len(ta[1]) != len(tb[1]):
            return False
        return all(latex_equal(x, y) for x, y in zip(ta[1], tb[1], strict=True))
    fa, fb = _as_fraction(na), _as_fraction(nb)
    if fa is not None and fb is not None:
        return fa == fb
    return _sympy_equal(na, nb)


_ALLOWED = re.compile(r"[0-9a-zA-Z+\-*/^().\s]*")
_NAMES = {"sqrt", "pi"}


def _to_python(s: str) -> str | None:
    """Translate a normalised LaTeX answer into a whitelisted expression string, or ``None``."""
    t = s
    for _ in range(10):  # innermost-first: \frac{..}{..} and \sqrt{..} with brace-free arguments
        before = t
        t = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"((\1)/(\2))", t)
        t = re.sub(r"\\sqrt\[([^\[\]{}]*)\]\{([^{}]*)\}", r"((\2)**(1/(\1)))", t)
        t = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", t)
        if t == before:
            break
    t = t.replace("\\pi", " pi ").replace("\\cdot", "*").replace("\\times", "*")
    t = t.replace("{", "(").replace("}", ")").replace("^", "**")
    if "\\" in t or not _ALLOWED.fullmatch(t.replace("**", "^")):
        return None
    names = set(re.findall(r"[a-zA-Z]{2,}", t))
    if not names <= _NAMES:
        return None
    for exp in re.findall(r"\*\*\s*\(?\s*(\d+)", t):
        if int(exp) > 1000:
            return None
    if len(t) > 200:
        return None
    return t


def _sympy_equal(a: str, b: str) -> bool:
    try:
        import sympy
        from sympy.parsing.sympy_parser import (
            convert_xor,
            implicit_multiplication_application,
            parse_expr,
            standard_transformations,
        )
    except ImportError:
        return False
    pa, pb = _to_python(a), _to_python(b)
    if pa is None or pb is None:
        return False
    transforms = (*standard_transformations, implicit_multiplication_application, convert_xor)
    local = {"sqrt": sympy.sqrt, "pi": sympy.pi}
    try:
        ea = parse_expr(pa, local_dict=local, transformations=transforms)
        eb = parse_expr(pb, local_dict=local, transformations=transforms)
        diff = sympy.simplify(ea - eb)
        if diff == 0:
            return True
        if not diff.free_symbols:
            va, vb = complex(sympy.N(ea)), complex(sympy.N(eb))
            return abs(va - vb) <= 1e-9 * max(1.0, abs(va), abs(vb))
    except Exception:  # a parse or evaluation failure means "not shown equal", never a crash
        return False
    return False
