"""C types of task parameters → numpy dtypes, and the parsing of C function signatures.

One table, used by input generation, the C reference loader, the CPU driver and ``validate``
(which checks that reference.c and every implementation declare the task's parameter list).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from veriforge.cuda.source_reader import blank, functions
from veriforge.errors import ConfigError

__all__ = ["CSignatureError", "SigParam", "base_type", "find_signature", "is_pointer", "numpy_dtype",
           "same_type"]

_DTYPES: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "int": "int32",
    "signed int": "int32",
    "int32_t": "int32",
    "unsigned int": "uint32",
    "unsigned": "uint32",
    "uint32_t": "uint32",
    "long long": "int64",
    "long long int": "int64",
    "int64_t": "int64",
    "long": "int64",
    "unsigned long long": "uint64",
    "unsigned long": "uint64",
    "uint64_t": "uint64",
    "size_t": "uint64",
    "unsigned char": "uint8",
    "uint8_t": "uint8",
    "short": "int16",
    "int16_t": "int16",
    "unsigned short": "uint16",
    "uint16_t": "uint16",
    "char": "int8",
    "signed char": "int8",
    "int8_t": "int8",
    "bool": "bool",
    "__half": "float16",
    "half": "float16",
}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")


class CSignatureError(ConfigError):
    """A C type or function signature cannot be understood."""


def is_pointer(ctype: str) -> bool:
    return "*" in ctype


def base_type(ctype: str) -> str:
    """``"const float* __restrict__"`` → ``"float"`` (qualifiers and the pointer removed)."""
    text = _QUALIFIERS.sub(" ", ctype.replace("*", " "))
    return " ".join(text.split())


def numpy_dtype(ctype: str) -> str:
    """numpy dtype name for the pointee (pointers) or the value (scalars) of ``ctype``."""
    if ctype.count("*") > 1:
        raise CSignatureError(f"pointer-to-pointer parameters are not supported: {ctype!r}")
    base = base_type(ctype)
    if base not in _DTYPES:
        raise CSignatureError(f"unsupported C type {ctype!r} (supported: {', '.join(sorted(_DTYPES))})")
    return _DTYPES[base]


def _canonical(ctype: str) -> tuple[str, bool, bool]:
    """(base, pointer, pointee-const): ``__restrict__`` and top-level const do not count."""
    pointer = "*" in ctype
    pointee = ctype.split("*")[0] if pointer else ctype
    const = pointer and bool(re.search(r"\bconst\b", pointee))
    return base_type(ctype), pointer, const


def same_type(a: str, b: str) -> bool:
    """True when two spellings denote the same parameter type for a caller."""
    ca, cb = _canonical(a), _canonical(b)
    if ca[1] != cb[1] or ca[2] != cb[2]:
        return False
    if ca[0] == cb[0]:
        return True
    try:
        return numpy_dtype(a) == numpy_dtype(b) and ca[0] not in ("long", "unsigned long") \
            and cb[0] not in ("long", "unsigned long")
    except CSignatureError:
        return False


@dataclass(frozen=True)
class SigParam:
    name: str
    ctype: str


def find_signature(source: str, function: str) -> list[SigParam]:
    """Parameters of the definition of ``function`` in C/C++ ``source`` (first definition wins).

    Good enough for the plain signatures tasks use (no function-pointer parameters); raises
    :class:`CSignatureError` when no definition is found.
    """
    text = blank(source)
    for fn in functions(text):
        if fn.name != function or not re.search(r"\bvoid\s*$", text[fn.start:fn.name_start]):
            continue
        inside = text[fn.params[0] + 1:fn.params[1]].strip()
        if inside in ("", "void"):
            return []
        params = []
        for part in inside.split(","):
            part = " ".join(part.split())
            pm = re.match(r"^(.*?)([A-Za-z_]\w*)$", part)
            if not pm or not pm.group(1).strip():
                raise CSignatureError(f"cannot parse parameter {part!r} of {function}()")
            params.append(SigParam(pm.group(2), " ".join(pm.group(1).replace("*", " * ").split())))
        return params
    raise CSignatureError(f"no definition of void {function}(...) found")
