"""The dataset build: dedup before verifying, real verification with estimates, resume, executors, errors."""

from __future__ import annotations

import importlib.util
import pickle
import typing
from pathlib import Path

import pytest

from veriforge.core.store import RunStore
from veriforge.cudaperf.dataset import build as build_mod
from veriforge.cudaperf.dataset.build import NAMESPACE, BuildError, BuildOptions, build

_spec = importlib.util.spec_from_file_location("cudaperf_toy_families_b", Path(__file__).with_name("toy_families.py"))
toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(toy)


@pytest.fixture(scope="module")
def real_build(tmp_path_factory, session_build_home, link_build_caches):
    """One real build of the toy families (CPU runtime verification and cost-model estimates)."""
    import os

    home = tmp_path_factory.mktemp("home")
    link_build_caches(str(home))
    old = os.environ.get("VERIFORGE_HOME")
    os.environ["VERIFORGE_HOME"] = str(home)
    toy.register()
    try:
        out = tmp_path_factory.mktemp("ds")
        # c2cuda only: a torch2cuda verification starts the torch fork server, too slow for this budget
        summary = build(BuildOptions(out=out, families=["toy_axpy"], jobs=2, progress=False))
        yield out, summary
    finally:
        toy.unregister()
        if old is None:
            os.environ.pop("VERIFORGE_HOME", None)
        else:
            os.environ["VERIFORGE_HOME"] = old


@pytest.fixture
def toys():
    toy.register()
    yield toy
    toy.unregister()


def _records(out: Path) -> dict[str, dict]:
    return {r.value["id"]: r.value for r in RunStore(out / "build.sqlite").records(NAMESPACE)}


def test_real_build_keeps_verified_drops_broken_and_duplicates(real_build):
    out, summary = real_build
    recs = _records(out)
    assert {i for i, r in recs.items() if r["status"] == "kept"} == {"toy_axpy_a", "toy_axpy_b"}, {
        i: (r["status"], r.get("reason")) for i, r in recs.items()}
    assert recs["toy_axpy_a_copy"]["status"] == "duplicate" and recs["toy_axpy_a_copy"]["rule"] == "exact"
    assert recs["toy_axpy_a_copy"]["of"] == "toy_axpy_a"
    assert recs["toy_axpy_a_renamed"]["rule"] == "structural" and recs["toy_axpy_a_renamed"]["of"] == "toy_axpy_a"
    assert recs["toy_axpy_bundled"]["status"] == "bundled" and recs["toy_axpy_bundled"]["of"] == "c2cuda/saxpy"
    broken = recs["toy_axpy_broken"]
    assert broken["status"] == "dropped" and "naive" in broken["reason"]
    assert not (out / "tasks" / "c2cuda" / "toy_axpy_broken").exists()  # dropped folders are removed
    assert (out / "tasks" / "c2cuda" / "toy_axpy_a" / "impls" / "vectorized.cu").is_file()
    # duplicates were never verified: only 3 tasks (2 kept + broken) ran, 3 implementations each
    tot = summary.total()
    assert (tot.verified, tot.impls_verified, tot.duplicates, tot.bundled) == (3, 9, 2, 1)


def test_real_build_records_estimates_with_provenance(real_build):
    out, _ = real_build
    row = _records(out)["toy_axpy_a"]["row"]
    configs = {c["name"] for c in __import__("json").loads(row["configs"])}
    for impl in row["implementations"]:
        assert impl["verified"] is True
        assert {e["config"] for e in impl["estimates"]} == configs
        for e in impl["estimates"]:
            assert e["provenance"] == "estimated" and e["gpu"] and "cost-model" in e["cost_model"]
            assert e["time_s"] is None or e["time_s"] > 0
    assert any(e["time_s"] for i in row["implementations"] for e in i["estimates"])
    assert (out / "data" / "train.parquet").is_file() and (out / "DATASHEET.md").is_file()  # exported at the end


def test_resume_after_max_tasks_and_crash_never_verifies_a_recorded_task_twice(tmp_path, toys, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(build_mod, "verify_task", toy.fake_verify(calls))
    opts = dict(out=tmp_path, families=list(toy.NAMES), jobs=1, progress=False, export=False, warm=False)
    build(BuildOptions(**opts, max_tasks=2))
    assert calls == ["toy_axpy_a", "toy_axpy_b"]
    build(BuildOptions(**opts, max_tasks=3))
    assert calls == ["toy_axpy_a", "toy_axpy_b", "toy_axpy_broken"]  # only the new one

    # a crash after the first recorded result of a fresh build
    crash_dir = tmp_path / "crash"
    calls.clear()

    def boom(task, result):
        raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError):
        build(BuildOptions(**{**opts, "out": crash_dir}), on_result=boom)
    before = list(calls)
    recorded = {i for i, r in _records(crash_dir).items() if r["status"] in ("kept", "dropped")}
    assert recorded == {"toy_axpy_a"}
    runs = RunStore(crash_dir / "build.sqlite").list_runs(build_mod.RUN_KIND)
    assert runs[-1].status == "failed"
    calls.clear()
    summary = build(BuildOptions(**{**opts, "out": crash_dir}))
    assert not recorded & set(calls)  # nothing recorded before the crash ran again
    assert set(before) | set(calls) == {"toy_axpy_a", "toy_axpy_b", "toy_axpy_broken", "toy_relu_clamp"}
    assert summary.total().resumed == 1 and summary.total().kept == 3

    # --fresh ignores (deletes) the records and verifies everything again
    calls.clear()
    build(BuildOptions(**{**opts, "out": crash_dir}, resume=False))
    assert sorted(calls) == sorted(["toy_axpy_a", "toy_axpy_b", "toy_axpy_broken", "toy_relu_clamp"])


def test_a_task_that_kills_the_build_process_is_isolated_then_dropped(tmp_path, toys, monkeypatch):
    """A crashing reference runs in-process: the build dies with whatever was in flight. On resume
    those tasks are verified one at a time first; one that dies alone is dropped, not retried forever."""
    calls: list[str] = []
    monkeypatch.setattr(build_mod, "verify_task", toy.fake_verify(calls))
    opts = dict(out=tmp_path, families=list(toy.NAMES), jobs=1, progress=False, export=False, warm=False)
    build(BuildOptions(**opts, max_tasks=1))
    store = RunStore(tmp_path / "build.sqlite")
    chash = next(r.key for r in store.records(NAMESPACE) if r.value["id"] == "toy_axpy_a")
    # as if the process had died with toy_axpy_a in flight among others ...
    store.put_record(NAMESPACE, chash, {"id": "toy_axpy_a", "family": "toy_axpy", "status": "started", "solo": False})
    order: list[str] = []
    monkeypatch.setattr(build_mod, "_verify_all", lambda pending, *a, solo=False, **k: order.extend(
        (t.id, solo) for t, _ in pending))
    build(BuildOptions(**opts, max_tasks=2))
    assert order[0] == ("toy_axpy_a", True) and ("toy_axpy_b", False) in order  # suspect first, alone
    # ... and as if it died again with toy_axpy_a verified alone: dropped with the reason, never retried
    store.put_record(NAMESPACE, chash, {"id": "toy_axpy_a", "family": "toy_axpy", "status": "started", "solo": True})
    order.clear()
    build(BuildOptions(**opts, max_tasks=2))
    assert ("toy_axpy_a", True) not in order and ("toy_axpy_a", False) not in order
    assert "died while verifying this task alone" in _records(tmp_path)["toy_axpy_a"]["reason"]


def test_resume_refuses_another_seed(tmp_path, toys, monkeypatch):
    monkeypatch.setattr(build_mod, "verify_task", toy.fake_verify([]))
    opts = dict(out=tmp_path, families=["toy_relu"], jobs=1, progress=False, export=False, warm=False)
    build(BuildOptions(**opts))
    with pytest.raises(BuildError, match="seed"):
        build(BuildOptions(**opts, seed=7))
    build(BuildOptions(**opts, seed=7, resume=False))


def test_limit_per_family_and_kind_filter(tmp_path, toys, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(build_mod, "verify_task", toy.fake_verify(calls))
    s = build(BuildOptions(out=tmp_path, families=list(toy.NAMES), limit=1, jobs=1, progress=False, export=False,
                           warm=False))
    assert calls == ["toy_axpy_a", "toy_relu_clamp"]
    assert s.families["toy_axpy"].generated == 1
    with pytest.raises(BuildError, match="generates c2cuda"):
        build(BuildOptions(out=tmp_path, families=["toy_axpy"], kind="torch2cuda"))


def test_bad_arguments_are_clear(tmp_path, toys):
    with pytest.raises(BuildError, match=r"unknown family 'nope'; known: .*toy_axpy"):
        build(BuildOptions(out=tmp_path, families=["nope"]))
    for bad, text in ((dict(jobs=0), "--jobs"), (dict(executor="slurm"), "--executor"),
                      (dict(kind="cuda"), "--kind"), (dict(limit=0), "--limit"), (dict(dedup="fuzzy"), "--dedup")):
        with pytest.raises(BuildError, match=text):
            build(BuildOptions(out=tmp_path, families=["toy_axpy"], **bad))


def test_ray_executor_path_with_a_stand_in(tmp_path, toys, monkeypatch):
    """--executor ray makes a RayExecutor(address, num_cpus=jobs) and submits the picklable job to it.
    (A real local Ray cluster takes longer to start than this suite's budget; the job function is
    the same one the thread pool runs, and it pickles.)"""
    from veriforge.cuda.evaluate import executor as ex

    made: list[tuple] = []

    class FakeRay(ex.ThreadExecutor):
        def __init__(self, address, *, num_cpus=None, **kw):
            made.append((address, num_cpus))
            super().__init__(num_cpus)

        def submit(self, fn, *args, **kwargs):
            pickle.dumps((fn, args, kwargs))  # what Ray would ship to a worker
            return super().submit(fn, *args, **kwargs)

    calls: list[str] = []
    monkeypatch.setattr(ex, "RayExecutor", FakeRay)
    fake = toy.fake_verify(calls)
    monkeypatch.setattr(build_mod, "verify_task", _Picklable(fake))
    s = build(BuildOptions(out=tmp_path, families=["toy_relu"], jobs=2, executor="ray", progress=False,
                           export=False, warm=False))
    assert made == [("local", 2)] and calls == ["toy_relu_clamp"] and s.total().kept == 1
    assert pickle.loads(pickle.dumps(build_mod.__dict__["build"])) is build  # module-level, importable
    assert pickle.loads(pickle.dumps(build_mod.verify_task.__class__)) is _Picklable


class _Picklable:
    """A callable wrapper that pickles by reference to a stored function (stand-in for verify_task)."""

    _fns: typing.ClassVar[dict[int, object]] = {}

    def __init__(self, fn):
        self.key = id(fn)
        _Picklable._fns[self.key] = fn

    def __call__(self, *a, **k):
        return _Picklable._fns[self.key](*a, **k)


def test_a_harness_error_is_retried_once_before_an_implementation_is_dropped(tmp_path, monkeypatch):
    from veriforge.cuda.evaluate import harness

    task = next(t for t in toy.toy_axpy(0) if t.id == "toy_axpy_a")
    folder = task.write(tmp_path)
    real = harness.evaluate
    calls: list[str] = []

    def flaky(spec, path, *a, **kw):  # the first evaluation of each implementation hits a machine error
        calls.append(path.name)
        if calls.count(path.name) == 1:
            raise OSError(28, "No space left on device")
        return real(spec, path, *a, **kw)

    monkeypatch.setattr(harness, "evaluate", flaky)
    out = build_mod.verify_task(str(folder), estimate=False)
    assert out["ok"] and all(i["verified"] for i in out["impls"])
    assert len(calls) == 2 * len(out["impls"])

    def broken(spec, path, *a, **kw):  # an error that repeats drops the implementation, with the reason
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(harness, "evaluate", broken)
    out = build_mod.verify_task(str(folder), estimate=False)
    assert not out["ok"] and all("No space left" in i["reason"] and i["attempts"] == 2 for i in out["impls"])
