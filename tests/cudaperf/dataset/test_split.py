"""Splits: deterministic by (family, variant group) and seed; bundled tasks never in a generated split."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from veriforge.cuda.tasks.load import bundled_root, bundled_tasks
from veriforge.cudaperf.dataset.split import SplitError, assert_no_bundled, assign, group_key, split_of


def _rows(n_groups: int = 300, per_group: int = 3) -> list[dict]:
    return [{"id": f"t{g}_{k}", "family": f"fam{g % 7}", "kind": "c2cuda", "reference": f"// {g} {k}",
             "variant": json.dumps({"group": f"g{g}", "dtype": ["float", "double", "int"][k]})}
            for g in range(n_groups) for k in range(per_group)]


def test_assignment_is_deterministic_and_groups_never_straddle():
    rows = _rows()
    a, b = assign(rows, seed=3), assign(list(reversed(rows)), seed=3)
    ids = {s: sorted(r["id"] for r in v) for s, v in a.items()}
    assert ids == {s: sorted(r["id"] for r in v) for s, v in b.items()}
    where = {}
    for split, items in a.items():
        for r in items:
            g = json.loads(r["variant"])["group"]
            assert where.setdefault((r["family"], g), split) == split
    sizes = Counter({s: len(v) for s, v in a.items()})
    assert 0.7 < sizes["train"] / len(rows) < 0.9 and sizes["validation"] > 0 and sizes["test"] > 0
    # another seed reshuffles groups; removing rows never moves the others
    assert assign(rows, seed=4)["test"] != a["test"]
    half = assign(rows[: len(rows) // 2], seed=3)
    assert {r["id"] for r in half["test"]} <= {r["id"] for r in a["test"]}


def test_family_mode_keeps_whole_families_together():
    out = assign(_rows(), seed=1, by="family")
    fams = {s: {r["family"] for r in v} for s, v in out.items()}
    assert not (fams["train"] & fams["test"]) and not (fams["train"] & fams["validation"])


def test_variant_without_group_uses_the_whole_variant():
    assert group_key("f", {"op": "add", "dtype": "float"}) != group_key("f", {"op": "add", "dtype": "double"})
    assert group_key("f", {"group": "x", "n": 1}) == group_key("f", {"group": "x", "n": 2})
    with pytest.raises(SplitError):
        split_of("u", 0, (0.5, 0.5, 0.5))
    with pytest.raises(SplitError):
        group_key("f", {}, by="task")


def test_the_63_bundled_tasks_are_never_in_a_generated_split():
    bundled = bundled_tasks()
    assert len(bundled) == 63
    rows = _rows(20, 1)
    assert_no_bundled(rows)
    # a generated row carrying any bundled reference (even reformatted) is refused
    for folder in (bundled[0], bundled[-1]):
        kind = folder.parent.name
        ref = (folder / ("reference.c" if kind == "c2cuda" else "reference.py")).read_text()
        leak = {"id": "gen_copy", "family": "fam0", "kind": kind, "reference": "\n\n" + ref, "variant": "{}"}
        with pytest.raises(SplitError, match="bundled"):
            assert_no_bundled([*rows, leak])
    assert bundled_root().name == "tasks"
