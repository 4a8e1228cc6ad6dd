"""Train / validation / test assignment of generated tasks: deterministic, by group, never bundled.

The rule (docs/cudaperf-dataset.md):

* The unit of assignment is a **group**: ``(family, variant group)``. A task's variant group is
  ``variant["group"]`` when the family sets it (e.g. every dtype/size of one op composition), else
  the canonical JSON of its whole ``variant`` dict (its structural point). Every task of one group
  gets the same split, so near-identical variants never straddle train and test.
* ``by="family"`` makes the whole family the unit instead (held-out-family evaluation).
* The split is a pure function of ``(seed, unit)``: ``u = int(sha256("cudaperf-split:<seed>:<unit>")[:16], 16)
  / 2**64``; ``u < train`` → train, ``u < train + validation`` → validation, else test (default
  0.8 / 0.1 / 0.1). Adding or removing other tasks never moves a task to another split, and the
  same seed always reproduces the same assignment.
* The 63 bundled tasks (``veriforge/data/tasks``) are the curated evaluation set: they are not in
  any generated split (:func:`assert_no_bundled` checks ids and normalised references).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from veriforge.errors import VeriforgeError

__all__ = ["SPLITS", "SplitError", "assert_no_bundled", "assign", "group_key", "split_of"]

SPLITS = ("train", "validation", "test")


class SplitError(VeriforgeError, ValueError):
    """Bad split fractions, or a bundled (curated) task found in a generated split."""


def group_key(family: str, variant: Mapping[str, Any] | None, by: str = "group") -> str:
    """The unit a task is assigned with (see the module docstring)."""
    if by == "family":
        return family
    if by != "group":
        raise SplitError(f"split unit must be 'group' or 'family', not {by!r}")
    variant = dict(variant or {})
    group = variant.get("group")
    body = json.dumps(group if group is not None else variant, sort_keys=True, default=str)
    return f"{family}|{body}"


def split_of(unit: str, seed: int = 0, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> str:
    """The split of an assignment unit under ``seed``."""
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-9:
        raise SplitError(f"split fractions must be three non-negative numbers summing to 1, got {fractions}")
    digest = hashlib.sha256(f"cudaperf-split:{seed}:{unit}".encode()).hexdigest()
    u = int(digest[:16], 16) / 2.0**64
    if u < fractions[0]:
        return "train"
    if u < fractions[0] + fractions[1]:
        return "validation"
    return "test"


def assign(rows: Iterable[Mapping[str, Any]], seed: int = 0, *, by: str = "group",
           fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> dict[str, list[dict[str, Any]]]:
    """Rows (with ``family`` and ``variant``; variant may be a JSON string) → ``{split: rows}``."""
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for row in rows:
        variant = row.get("variant")
        if isinstance(variant, str):
            variant = json.loads(variant) if variant else {}
        split = split_of(group_key(str(row["family"]), variant, by), seed, fractions)
        out[split].append(dict(row))
    return out


def assert_no_bundled(rows: Iterable[Mapping[str, Any]]) -> None:
    """Refuse a generated split that contains a bundled task (by id or by normalised reference)."""
    from .dedup import bundled_index, reference_keys

    keys = bundled_index()
    for row in rows:
        if row.get("source") == "bundled":
            raise SplitError(f"bundled task {row.get('id')} is in a generated split")
        ref = str(row.get("reference", ""))
        k = reference_keys(ref, str(row.get("kind", "c2cuda")))
        hit = keys.get(k.exact) or keys.get(k.structural)
        if hit:
            raise SplitError(f"generated task {row.get('id')} reproduces the bundled task {hit}; the curated "
                             f"evaluation set must not leak into training data")
