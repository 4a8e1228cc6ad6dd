"""(faster, slower) pairs for CudaPerf's rankers: margin and provenance rules, the three sources
(harness on bundled tasks, dataset rows, a run store), files and splits by task."""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.core.store import RunStore
from veriforge.cuda.evaluate import evaluate
from veriforge.cuda.evaluate.harness import resolve_task
from veriforge.cudaperf.pairs import (
    PairError,
    TimedProgram,
    kfold_by_task,
    pairs_from_programs,
    pairs_from_rows,
    pairs_from_store,
    pairs_from_tasks,
    read_pairs,
    write_pairs,
)
from veriforge.cudaperf.rank_features import FEATURE_NAMES, normalise_source, static_features

KERNEL = "__global__ void k(float* y, const float* x, int n) {{ int i = threadIdx.x; {body} }}\n"


def _prog(task: str, name: str, times: dict[str, float], provenance: str = "estimated", clock: str = "H100",
          body: str = "y[i] = x[i];") -> TimedProgram:
    return TimedProgram(task=task, name=name, source=KERNEL.format(body=body), times=times, provenance=provenance,
                        clock=clock)


def test_margin_and_provenance_rules() -> None:
    progs = [
        _prog("t", "fast", {"a": 1.0, "b": 1.0}),
        _prog("t", "close", {"a": 1.05, "b": 2.0}, body="if (i < n) y[i] = x[i];"),  # 1.05x on a: noise
        _prog("t", "measured", {"a": 9.0}, provenance="measured"),  # never paired with estimates
        _prog("t", "other_gpu", {"a": 5.0}, clock="A100"),  # same provenance, other clock: never paired
        _prog("u", "u1", {"a": 1.0}),
        _prog("u", "u2", {"a": 0.0}),  # a non-positive time is unknown, not fast
    ]
    pairs = pairs_from_programs(progs)
    assert [(p.task, p.config, p.faster.name, p.slower.name) for p in pairs] == [("t", "b", "fast", "close")]
    p = pairs[0]
    assert p.speedup == pytest.approx(2.0) and p.provenance == "estimated" and p.clock == "H100"
    assert "cost model" in p.label_source
    assert p.faster.source.startswith("__global__") and p.slower.source != p.faster.source
    assert set(p.faster.features) == set(FEATURE_NAMES)
    assert p.slower.features["text.branches"] > p.faster.features["text.branches"]
    assert pairs_from_programs(progs, min_speedup=1.01)[0].speedup == pytest.approx(1.05)


def test_comments_and_docstrings_never_reach_the_features() -> None:
    plain = KERNEL.format(body="y[i] = x[i];")
    chatty = "// fastest kernel: __syncthreads __shfl_down_sync atomicAdd float4\n/* if (x) for (;;) */\n" + plain
    assert static_features(chatty) == static_features(plain)
    assert normalise_source('const char* s = "a // b"; // c\n') == 'const char* s = "a // b";\n'
    module = ('"""Fast: warp shuffles everywhere."""\nimport torch\n# __syncthreads\n'
              'SRC = r"""__global__ void k(float* y) { y[0] = 1; } // __shfl_down_sync"""\n'
              'def forward(x):\n    """__syncthreads"""\n    return x\n')
    text = normalise_source(module)
    assert "__global__ void k" in text and "shfl" not in text and "__syncthreads" not in text
    assert "warp shuffles" not in text and "def forward" in text


CONFIGS = ["small", "odd"]  # the two cheap configurations of sum_reduce keep the test fast


def test_pairs_from_bundled_implementations_and_from_the_store(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    pairs, notes = pairs_from_tasks(["c2cuda/sum_reduce"], store=store, configs=CONFIGS, jobs=2)
    assert notes == []
    spec = resolve_task("c2cuda/sum_reduce")
    res = {i.name: evaluate(spec, spec.folder / i.file, store=store, configs=CONFIGS) for i in spec.implementations}
    assert all(r.cached for r in res.values())  # the harness cached every evaluation in the store
    # every configuration contributes (the harness may add estimate-only timing configurations)
    assert set(CONFIGS) <= {p.config for p in pairs}
    assert all(p.task == "c2cuda/sum_reduce" and p.provenance == "estimated" for p in pairs)
    for p in pairs:
        assert p.speedup >= 1.1 and p.faster.time_s * p.speedup == pytest.approx(p.slower.time_s)
        assert res[p.faster.name].time("estimated", p.config) < res[p.slower.name].time("estimated", p.config)
        assert p.faster.features["analysis.analysis_available"] == 1.0
        assert p.faster.strategy and p.faster.quality is not None
    assert ("warp_shuffle", "atomic") in {(p.faster.name, p.slower.name) for p in pairs if p.config == "odd"}

    from_store = pairs_from_store(store, provenance="estimated")
    key = lambda p: (p.config, p.faster.time_s, p.slower.time_s)  # noqa: E731
    assert sorted(map(key, from_store)) == sorted(map(key, pairs))
    assert all(p.task == "c2cuda/sum_reduce" and p.faster.source for p in from_store)
    assert {p.provenance for p in pairs_from_store(store)} <= {"estimated", "emulated"}  # never mixed
    # a wrong result in a store never makes a pair
    other = RunStore(tmp_path / "s.sqlite")
    good = next(store.iter_evaluations())[2]
    other.put_evaluation("k1", {**good, "verdict": {**good["verdict"], "correct": False}}, kind="cuda-eval")
    assert pairs_from_store(other) == []
    other.put_evaluation("k2", good, kind="cuda-eval")
    assert pairs_from_store(other) == []  # one program alone makes no pair


def test_dataset_rows_and_pair_files(tmp_path: Path) -> None:
    rows = [{"task_id": "gen/a", "implementations": [
        {"name": "naive", "source": KERNEL.format(body="y[i]=x[i];"), "verified": True,
         "times": {"s": {"time_s": 4e-6, "provenance": "estimated", "gpu": "H100-SXM"}, "l": 1e-3}},
        {"name": "fast", "source": KERNEL.format(body="y[i]=x[i]*2;"), "verified": True,
         "times": {"s": {"time_s": 1e-6, "provenance": "estimated", "gpu": "H100-SXM"}, "l": 1e-4}},
        {"name": "broken", "source": "x", "verified": False, "times": {"s": 1e-9}},
    ]}]
    pairs = pairs_from_rows(rows)
    assert sorted((p.config, p.faster.name, p.slower.name) for p in pairs) == [("l", "fast", "naive"),
                                                                                ("s", "fast", "naive")]
    path = tmp_path / "pairs.jsonl"
    assert write_pairs(pairs, path) == 2
    back = read_pairs(path)
    assert [b.to_dict() for b in back] == [p.to_dict() for p in pairs]
    with pytest.raises(PairError, match="implementations"):
        pairs_from_rows([{"task_id": "x"}])
    path.write_text('{"task": "x"}\n')
    with pytest.raises(PairError, match=":1:"):
        read_pairs(path)


def test_kfold_holds_each_task_out_exactly_once() -> None:
    progs = [_prog(f"t{k}", n, {"c": t}) for k in range(7) for n, t in (("a", 1.0), ("b", 2.0), ("c", 4.0))]
    pairs = pairs_from_programs(progs)
    folds = kfold_by_task(pairs, k=3)
    assert len(folds) == 3
    held = [p.task for _, test in folds for p in test]
    assert sorted(held) == sorted(p.task for p in pairs)
    for train, test in folds:
        assert not {p.task for p in train} & {p.task for p in test}
    with pytest.raises(PairError):
        kfold_by_task([p for p in pairs if p.task == "t0"])


def test_pairs_from_the_shipped_dataset_rows() -> None:
    """Rows exported by the dataset build (implementations[].estimates) pair as they are."""
    import json

    sample = Path(__file__).resolve().parents[2] / "src" / "veriforge" / "data" / "cudaperf" / "sample"
    rows = [json.loads(line) for split in ("train", "validation", "test")
            for line in (sample / "data" / f"{split}.jsonl").read_text().splitlines() if line.strip()]
    pairs = pairs_from_rows(rows)
    assert pairs and all(p.task.split("/")[0] in ("c2cuda", "torch2cuda") for p in pairs)
    for p in pairs:  # labelled only with the margin, at one configuration, estimates of one cost model
        assert p.slower.time_s >= 1.1 * p.faster.time_s and p.speedup >= 1.1
        assert p.provenance == "estimated" and "cost-model" in p.clock
