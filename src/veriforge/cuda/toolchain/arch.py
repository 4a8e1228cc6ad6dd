"""GPU architecture names: accept what people type, reject what nvcc would reject, say why.

``nvcc -arch=sm_91`` fails with a terse "Unsupported gpu architecture"; checking first lets us
list the architectures this compiler does know. Accepted spellings: ``sm_90``, ``sm90``, ``90``,
``9.0``, ``compute_90`` and the feature suffixes ``sm_90a`` / ``sm_100f``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from veriforge.errors import CudaError

_ARCH = re.compile(r"^(?:sm_?|compute_?)?(\d{2,3})([af]?)$")
_DOTTED = re.compile(r"^(\d{1,2})\.(\d)([af]?)$")

#: Architectures every supported nvcc (CUDA 12.x, 13.x) compiles for; used when the compiler
#: cannot be asked (``--list-gpu-code`` missing on old releases).
BASELINE_ARCHS: tuple[str, ...] = ("sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90")


class InvalidArchError(CudaError, ValueError):
    """An architecture name that is malformed or unknown to this compiler."""


def normalize_arch(arch: str) -> str:
    """``"90"``, ``"sm90"``, ``"9.0"``, ``"compute_90"`` → ``"sm_90"`` (suffix ``a``/``f`` kept)."""
    text = arch.strip().lower()
    if m := _DOTTED.match(text):
        return f"sm_{m.group(1)}{m.group(2)}{m.group(3)}"
    if m := _ARCH.match(text):
        return f"sm_{m.group(1)}{m.group(2)}"
    raise InvalidArchError(f"invalid GPU architecture {arch!r}: expected a name like sm_90 (or 90, sm90, 9.0)")


def validate_arch(arch: str, known: Sequence[str] = ()) -> str:
    """Normalise ``arch`` and check it against the compiler's ``--list-gpu-code`` (``known``).

    ``sm_90a``-style variants are accepted when their base (``sm_90``) is known and the family
    is Hopper or newer, where NVIDIA defines them.
    """
    name = normalize_arch(arch)
    pool = tuple(known) or BASELINE_ARCHS
    base = name.rstrip("af") if name[-1] in "af" else name
    number = int(base.removeprefix("sm_"))
    if base not in pool:
        raise InvalidArchError(
            f"GPU architecture {arch!r} is not supported by this nvcc; choose one of: {', '.join(pool)}"
        )
    if name != base and number < 90:
        raise InvalidArchError(f"{name}: the 'a'/'f' variants exist only for sm_90 and newer")
    return name
