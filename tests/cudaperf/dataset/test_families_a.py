"""The C→CUDA task families of part A (issue 14): element-wise, reduce, scan, stencil, gather.

Enumeration targets, unique ids, schema, structure (configs, strategies, signatures), structural
distinctness (the dataset drops near-duplicates), determinism, every task's ``[[timing]]``
configuration, and verification of a small sample on the CPU runtime (with the cost model's estimate
at the timing size) — plus a deliberately broken implementation, so the sample test can fail.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from veriforge.cuda.tasks.ctypes_map import find_signature, same_type
from veriforge.cuda.tasks.expr import evaluate
from veriforge.cuda.tasks.schema import STRATEGIES
from veriforge.cudaperf.dataset.family import GeneratedTask, get_family

TARGETS = {"c_elementwise": (1100, "ew_"), "c_reduce": (450, "red_"), "c_scan": (200, "scan_"),
           "c_stencil": (300, "st_"), "c_gather": (250, "ga_")}


@pytest.fixture(scope="module")
def tasks() -> dict[str, list[GeneratedTask]]:
    return {name: list(get_family(name).generate(0)) for name in TARGETS}


def test_counts_ids_and_schema(tasks: dict[str, list[GeneratedTask]]) -> None:
    every = [t for ts in tasks.values() for t in ts]
    assert len(every) >= 2300
    ids = [t.id for t in every]
    assert len(set(ids)) == len(ids), [i for i, n in Counter(ids).items() if n > 1][:5]
    for name, ts in tasks.items():
        target, prefix = TARGETS[name]
        assert len(ts) >= target, (name, len(ts))
        for t in ts:
            assert t.id.startswith(prefix) and t.kind == "c2cuda" and t.family == name
            t.check()
            assert len(t.configs) >= 2 and len({c["name"] for c in t.configs}) == len(t.configs)
            assert len({c["seed"] for c in t.configs}) == len(t.configs)
            strategies = [i.strategy for i in t.impls]
            assert len(t.impls) >= 3 and len(set(strategies)) == len(strategies) and set(strategies) <= set(STRATEGIES)
            assert len({i.quality for i in t.impls}) == len(t.impls)  # an honest ranking, no ties
            assert {"flops", "bytes"} <= set(t.metrics)
            assert t.variant and t.seed > 0
            assert "void reference(" in t.reference
            for impl in t.impls:
                assert '__global__' in impl.source and 'extern "C" void solve(' in impl.source
            # one [[timing]] configuration (H100 scale), its own seed, metrics defined there, int32 sizes
            assert [c["name"] for c in t.timing] == ["timing"], t.id
            timing = t.timing[0]
            assert timing["seed"] not in {c["seed"] for c in t.configs}
            assert all(-2**31 <= v < 2**31 for v in timing.values() if isinstance(v, int)), t.id
            assert evaluate(t.metrics["bytes"], timing) >= 8 * 2**20, t.id  # MBs of traffic: speed, not launches
            assert evaluate(t.metrics["flops"], timing) >= 0


def test_signatures_match_params(tasks: dict[str, list[GeneratedTask]]) -> None:
    """reference() and every solve() declare exactly the task's parameters (what validation checks per task)."""
    for ts in tasks.values():
        for t in ts[:: max(1, len(ts) // 60)]:  # a spread over every family's variants
            want = [(p["name"], p["type"]) for p in t.params]
            for source, fn in [(t.reference, "reference")] + [(i.source, "solve") for i in t.impls]:
                sig = find_signature(source, fn)
                assert len(sig) == len(want), (t.id, fn)
                for got, (_, ctype) in zip(sig, want, strict=True):
                    assert same_type(got.ctype, ctype), (t.id, fn, got.ctype, ctype)


def test_structurally_distinct(tasks: dict[str, list[GeneratedTask]]) -> None:
    """No two tasks differ only in numeric literals (the dataset's near-duplicate filter would drop one)."""
    seen: dict[str, str] = {}
    for t in (t for ts in tasks.values() for t in ts):
        text = "\n".join([t.reference, *(i.source for i in t.impls), *t.extra_files.values()])
        text = re.sub(r"\b\d+(\.\d*)?(e[-+]?\d+)?[fu]?\b", "N", text)
        assert text not in seen, (t.id, seen.get(text))
        seen[text] = t.id


def test_deterministic_per_seed() -> None:
    fam = get_family("c_elementwise")  # the family whose deep compositions are drawn from the seed
    a, b = list(fam.generate(5)), list(fam.generate(5))
    assert [t.id for t in a] == [t.id for t in b]
    assert [t.content_hash() for t in a[-40:]] == [t.content_hash() for t in b[-40:]]
    scan = get_family("c_scan")
    first0, first5 = next(scan.generate(0)), next(scan.generate(5))
    assert first0.id == first5.id  # the grid is fixed; the input seeds follow the family seed
    assert first0.configs[0]["seed"] != first5.configs[0]["seed"]


# one task per family, spanning int/float/double, 1-D/2-D/3-D layouts, segmented and per-row work
_SAMPLE = ("red_f32_argmax_ax1", "scan_i32_sum_ex_segflags", "st_f64_2d_box_r2_array_clamp",
           "ga_masksel_u8_f64_rows")


# Sampled implementations whose timing estimate is unknown at ANY size (cost-model limits, not the
# timing shape): (task, impl) -> the reason the estimate gives. Anything else must be complete.
_KNOWN_UNKNOWN = {("ga_masksel_u8_f64_rows", name): "address not determined"
                  for name in ("thread_per_row", "block_per_row", "warp_per_row")}
# how many sampled tasks get their timing estimates checked (each ~2-3 s: 16M-element inputs, 3 analyses)
_ESTIMATED = 2


def timing_estimates(folder) -> dict[str, object]:
    """{impl: the cost model's ConfigEstimate of the task's [[timing]] configuration}, computed as the
    harness does after verification (estimate_candidate with the verified configs' first trials), so
    the check_timing guards (kernels verified, traffic covering metrics.bytes) apply."""
    from veriforge.cuda.evaluate.backend import CCase
    from veriforge.cuda.evaluate.estimate import estimate_candidate
    from veriforge.cuda.tasks import load_task
    from veriforge.cuda.tasks.generate import make_case

    spec = load_task(folder)

    def case(name: str) -> CCase:
        c = make_case(spec, name, 0)
        return CCase(config=name, trial=0, args=c.args, variables=dict(c.env))

    cases, timing = [case(c.name) for c in spec.configs], [case(n) for n in spec.timing_names]
    return {i.name: estimate_candidate(spec, (folder / i.file).read_text(), cases, timing_cases=timing)
            .configs["timing"] for i in spec.implementations}


def assert_complete_timing(folder, known: dict[tuple[str, str], str]) -> None:
    for name, est in timing_estimates(folder).items():
        why = known.get((folder.name, name))
        if why is not None and est.time_s is None:
            assert any(why in u for u in est.unknown), (folder.name, name, est.unknown)
        else:
            assert est.time_s is not None and est.time_s > 0, (folder.name, name, est.unknown)


def test_sample_verifies_and_broken_impl_is_caught(tasks: dict[str, list[GeneratedTask]], tmp_path) -> None:
    from veriforge.cuda.tasks.validate import validate_many

    by_id = {t.id: t for ts in tasks.values() for t in ts}
    ew = tasks["c_elementwise"]
    picks = [next(t for t in ew if t.variant["depth"] == 3 and t.variant["dtype"] == "double"
                  and t.variant["inplace"]), *(by_id[i] for i in _SAMPLE)]
    paths = [t.write(tmp_path / "good") for t in picks]
    # the argmax task again, with a tiled kernel that resolves ties to the HIGHEST index
    folder = by_id["red_f32_argmax_ax1"].write(tmp_path / "bad")
    impl = folder / "impls" / "tiled_32x8.cu"
    src = impl.read_text()
    assert "b.i < a.i" in src
    impl.write_text(src.replace("b.i < a.i", "b.i > a.i"))
    reports = validate_many([*paths, folder], 2)
    for rep in reports[:-1]:
        assert rep.ok, (rep.task_id, rep.problems, [(i.name, i.reason) for i in rep.impls if not i.correct])
        assert len(rep.impls) == 3 and all(i.correct for i in rep.impls)
    bad = reports[-1]
    assert not bad.ok
    assert {i.name for i in bad.impls if not i.correct} == {"tiled_32x8"}
    for path in paths[:_ESTIMATED]:  # the cost model prices them at the timing size (the reward's speed)
        assert_complete_timing(path, _KNOWN_UNKNOWN)
