"""Thoughts: the distinct implementation strategies OptiML-G asks the model to try.

A single prompt for "a fast kernel" tends to get the same first idea every time; asking for the
*same* task under several named strategies (Mixture-of-Thoughts) spreads the candidates over
genuinely different designs, so at least one of them usually compiles, verifies and is fast. Each
:class:`Thought` is a name (what the report says won), a title and prompt guidance (what the
model is told to do differently).

The built-in set is :data:`DEFAULT_THOUGHTS`. A TOML file can add thoughts, override built-in
ones by name, or replace the whole set::

    replace = false            # true: use only the thoughts in this file

    [[thoughts]]
    name = "tiled"             # overrides the built-in "tiled"
    title = "Shared-memory tiling, 32x32"
    guidance = "Stage 32x32 tiles of the inputs in shared memory ..."

    [[thoughts]]
    name = "cooperative"       # a new one
    title = "Cooperative groups"
    guidance = "..."
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from veriforge.errors import ConfigError

__all__ = [
    "DEFAULT_THOUGHTS",
    "Thought",
    "ThoughtConfigError",
    "default_thoughts",
    "load_thoughts",
    "parse_thought_names",
    "select_thoughts",
]

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


class ThoughtConfigError(ConfigError):
    """A thoughts file or a ``--thoughts`` selection is malformed or names unknown thoughts."""


@dataclass(frozen=True)
class Thought:
    """One implementation strategy: ``name`` (an identifier), ``title`` and prompt ``guidance``."""

    name: str
    title: str
    guidance: str

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ThoughtConfigError(f"thought name {self.name!r}: use lowercase letters, digits, '_' or "
                                     "'-', starting with a letter")
        if not self.title.strip() or not self.guidance.strip():
            raise ThoughtConfigError(f"thought {self.name!r} needs a non-empty title and guidance")

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


DEFAULT_THOUGHTS: tuple[Thought, ...] = (
    Thought(
        "straightforward", "One thread per element",
        "Write the simplest correct kernel: one thread per output element, a bounds check against the "
        "problem size, 256-thread blocks and a grid that covers every element. Prefer obviously correct "
        "index arithmetic over cleverness; this is the baseline the other strategies must beat.",
    ),
    Thought(
        "grid_stride", "Grid-stride loops with coalesced access",
        "Launch a bounded grid (a small multiple of the SM count) and let each thread walk the data "
        "with a grid-stride loop. Make consecutive threads of a warp touch consecutive addresses so every "
        "global load and store is coalesced; mark read-only pointers `const __restrict__`.",
    ),
    Thought(
        "tiled", "Shared-memory tiling",
        "Stage the data each block reuses in `__shared__` tiles (cooperatively loaded with coalesced "
        "accesses, `__syncthreads()` between the load and compute phases), compute from shared memory, "
        "and pad tiles to avoid bank conflicts. Keep every barrier reachable by all threads of the block.",
    ),
    Thought(
        "warp_primitives", "Warp-level primitives",
        "Use warp-level primitives (`__shfl_down_sync`, `__shfl_xor_sync`, `__ballot_sync` with a full "
        "mask) for reductions, scans and voting inside a warp, so most communication avoids shared memory "
        "and barriers; combine per-warp results with a small shared-memory step or atomics.",
    ),
    Thought(
        "vectorized", "Vectorised memory access",
        "Move 16 bytes per memory instruction with `float4`/`int4` loads and stores where the pointers are "
        "16-byte aligned (check alignment at run time), handle the remainder that is not a multiple of the "
        "vector width with a scalar tail, and keep the access pattern coalesced.",
    ),
    Thought(
        "fused", "Fused single pass",
        "Do all the work in as few passes over global memory as possible: fuse element-wise stages, keep "
        "intermediates in registers, avoid temporary buffers and extra kernel launches, and read each "
        "input element once.",
    ),
)


def default_thoughts() -> list[Thought]:
    """A fresh list of the built-in thoughts."""
    return list(DEFAULT_THOUGHTS)


def _thought_from(entry: Any, where: str) -> Thought:
    if not isinstance(entry, dict):
        raise ThoughtConfigError(f"{where}: each [[thoughts]] entry must be a table")
    unknown = set(entry) - {"name", "title", "guidance"}
    if unknown:
        raise ThoughtConfigError(f"{where}: unknown keys {', '.join(sorted(unknown))} "
                                 "(a thought has name, title, guidance)")
    missing = [k for k in ("name", "title", "guidance") if not isinstance(entry.get(k), str)]
    if missing:
        raise ThoughtConfigError(f"{where}: thought needs string {', '.join(missing)}")
    return Thought(entry["name"], entry["title"], entry["guidance"])


def load_thoughts(path: str | Path, base: Iterable[Thought] | None = None) -> list[Thought]:
    """Thoughts from a TOML file (format in the module docstring) merged over ``base``.

    ``base`` defaults to the built-in thoughts; a file entry with an existing name replaces that
    thought in place, new names are appended in file order; ``replace = true`` drops ``base``.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ThoughtConfigError(f"thoughts file not found: {p}")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ThoughtConfigError(f"{p}: not valid TOML ({exc})") from None
    unknown = set(data) - {"replace", "thoughts"}
    if unknown:
        raise ThoughtConfigError(f"{p}: unknown keys {', '.join(sorted(unknown))} "
                                 "(expected replace, [[thoughts]])")
    entries = data.get("thoughts", [])
    if not isinstance(entries, list):
        raise ThoughtConfigError(f"{p}: 'thoughts' must be an array of tables ([[thoughts]])")
    replace = data.get("replace", False)
    if not isinstance(replace, bool):
        raise ThoughtConfigError(f"{p}: 'replace' must be true or false")
    merged: dict[str, Thought] = {} if replace else {t.name: t for t in (base or DEFAULT_THOUGHTS)}
    seen: set[str] = set()
    for i, entry in enumerate(entries, start=1):
        thought = _thought_from(entry, f"{p}: thoughts[{i}]")
        if thought.name in seen:
            raise ThoughtConfigError(f"{p}: thought {thought.name!r} is defined twice")
        seen.add(thought.name)
        merged[thought.name] = thought
    if not merged:
        raise ThoughtConfigError(f"{p}: no thoughts left (replace = true needs at least one [[thoughts]])")
    return list(merged.values())


def parse_thought_names(text: str | None) -> list[str] | None:
    """``"a, b,c"`` → ``["a", "b", "c"]``; ``None``/blank → ``None`` (all thoughts)."""
    if text is None or not text.strip():
        return None
    return [part.strip() for part in text.split(",") if part.strip()]


def select_thoughts(thoughts: Sequence[Thought], names: Sequence[str] | None) -> list[Thought]:
    """The thoughts named (in the order given), or all of them when ``names`` is None."""
    if names is None:
        return list(thoughts)
    by_name = {t.name: t for t in thoughts}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ThoughtConfigError(f"unknown thought(s) {', '.join(unknown)}; available: {', '.join(by_name)}")
    if len(set(names)) != len(names):
        raise ThoughtConfigError(f"thought named twice in {', '.join(names)}")
    if not names:
        raise ThoughtConfigError("select at least one thought")
    return [by_name[n] for n in names]
