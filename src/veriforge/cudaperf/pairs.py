"""(faster, slower) program pairs for CudaPerf's offline rankers.

A ranker learns "a is faster than b" from pairs of programs for the *same* task and input
configuration; absolute times do not transfer across tasks, orderings do. Pairs come from:

* **a task's implementations** evaluated by the harness (:func:`pairs_from_tasks`): on the CPU
  back-end the times are the cost model's *estimates* (provenance ``estimated``), on a GPU back-end
  they are *measured*;
* **a built dataset's rows** (:func:`pairs_from_rows`, row shape in docs/cudaperf-rank.md);
* **stored evaluations** in a :class:`~veriforge.core.store.RunStore` (:func:`pairs_from_store`).

Labelling reuses :func:`veriforge.rank.features.make_pairs`: a pair only when the slower program
takes at least ``min_speedup`` (1.1×) as long — smaller gaps are noise — and never across
provenances (or, for the same provenance, across GPUs/models: a time measured on an H100 and one
on an A100 say nothing about each other). Every record carries both programs' source text, both
static feature dicts (:mod:`veriforge.cudaperf.rank_features`) and ``label_source`` saying where
the ordering came from, so a reader of the numbers knows whether "accuracy" means agreement with
the cost model or with a GPU.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.cudaperf.rank_features import FEATURES_VERSION, static_features
from veriforge.errors import VeriforgeError
from veriforge.rank.features import TimedItem, make_pairs

__all__ = ["LABEL_SOURCES", "PairError", "PairRecord", "ProgramSide", "TimedProgram", "kfold_by_task",
           "pairs_from_programs", "pairs_from_rows", "pairs_from_store", "pairs_from_tasks", "read_pairs",
           "task_programs", "write_pairs"]

#: What the ordering of a pair means, by provenance of the two times.
LABEL_SOURCES = {
    "estimated": "cost-model estimate (CPU back-end): agreement with it is agreement with the cost model",
    "measured": "measured on a GPU",
    "emulated": "CPU emulation time (says little about a GPU)",
}


class PairError(VeriforgeError, ValueError):
    """Pairs cannot be built or read: malformed dataset rows or pair files, unknown tasks."""


@dataclass(frozen=True)
class TimedProgram:
    """One program of one task with its times per configuration (all of one provenance and clock)."""

    task: str
    name: str
    source: str
    times: Mapping[str, float]  # config -> seconds
    provenance: str = "estimated"
    clock: str = ""  # the GPU / model that produced the times: pairs never cross clocks
    strategy: str = ""
    quality: int | None = None
    analysis: Mapping[str, Any] | None = None  # a stored feature dict (shared vocabulary), if any


@dataclass
class ProgramSide:
    """One program of a pair as stored in a pair file."""

    name: str
    source: str
    time_s: float
    features: dict[str, float]
    strategy: str = ""
    quality: int | None = None


@dataclass
class PairRecord:
    """``faster`` ran ``speedup``× faster than ``slower`` on ``task`` / ``config`` (JSONL line)."""

    task: str
    config: str
    provenance: str
    speedup: float
    faster: ProgramSide
    slower: ProgramSide
    clock: str = ""
    label_source: str = ""
    features_version: str = FEATURES_VERSION
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairRecord:
        try:
            d = dict(data)
            d["faster"] = ProgramSide(**d["faster"])
            d["slower"] = ProgramSide(**d["slower"])
            return cls(**d)
        except (KeyError, TypeError) as exc:
            raise PairError(f"not a pair record ({exc}): keys {sorted(data)}") from exc


# ------------------------------------------------------------------------------------------ labelling


def pairs_from_programs(programs: Sequence[TimedProgram], *, min_speedup: float = 1.1,
                        features: Callable[[TimedProgram, str], dict[str, float]] | None = None,
                        ) -> list[PairRecord]:
    """Pairs within each task, configuration, provenance and clock, via ``make_pairs``.

    ``features(program, config)`` gives a program's feature dict at a configuration (default:
    :func:`~veriforge.cudaperf.rank_features.static_features` — with the stored ``analysis`` when
    the program has one, else with the task's static analysis when the task resolves, else text
    only). Non-positive or non-finite times are skipped (an unknown time is not a slow time).
    """
    feats = features or _default_features
    groups: dict[tuple[str, str], list[TimedProgram]] = {}
    for p in programs:
        groups.setdefault((p.provenance, p.clock), []).append(p)
    out: list[PairRecord] = []
    cache: dict[tuple[int, str], dict[str, float]] = {}
    for (provenance, clock), members in groups.items():
        items: list[TimedItem] = []
        by_id: dict[str, tuple[TimedProgram, str]] = {}
        for k, p in enumerate(members):
            for cfg, t in p.times.items():
                if t is None or not (math.isfinite(t) and t > 0):
                    continue
                item_id = f"{k}:{p.task}:{p.name}@{cfg}"
                by_id[item_id] = (p, cfg)
                items.append(TimedItem(id=item_id, task=p.task, time_s=float(t), features=(), config=cfg,
                                       provenance=provenance))  # type: ignore[arg-type]
        for pair in make_pairs(items, min_speedup=min_speedup):
            sides = []
            for item in (pair.strong, pair.weak):
                prog, cfg = by_id[item.id]
                key = (id(prog), cfg)
                if key not in cache:
                    cache[key] = feats(prog, cfg)
                sides.append(ProgramSide(name=prog.name, source=prog.source, time_s=item.time_s,
                                         features=cache[key], strategy=prog.strategy, quality=prog.quality))
            out.append(PairRecord(task=pair.task, config=str(pair.config), provenance=provenance,
                                  speedup=pair.speedup, faster=sides[0], slower=sides[1], clock=clock,
                                  label_source=LABEL_SOURCES.get(provenance, provenance)))
    return out


_SPEC_CACHE: dict[str, Any] = {}


def _spec(task: str) -> Any:
    if task not in _SPEC_CACHE:
        from veriforge.cuda.evaluate.harness import resolve_task

        try:
            _SPEC_CACHE[task] = resolve_task(task)
        except Exception:  # an unknown task only means no analysis features
            _SPEC_CACHE[task] = None
    return _SPEC_CACHE[task]


def _default_features(prog: TimedProgram, config: str) -> dict[str, float]:
    if prog.analysis is not None:
        return static_features(prog.source, analysis=prog.analysis)
    spec = _spec(prog.task)
    # verification configurations and timing-only ones ([[timing]]: sizes only the estimate sees)
    if spec is not None and any(c.name == config for c in (*spec.configs, *getattr(spec, "timing", ()))):
        return static_features(prog.source, spec, config)
    return static_features(prog.source)


# ------------------------------------------------------------------------------------- sources


def task_programs(task: Any, *, backend: str = "cpu", store: Any = None, configs: Sequence[str] | None = None,
                  provenance: str | None = None, jobs: int = 1) -> tuple[list[TimedProgram], list[str]]:
    """A task's bundled implementations evaluated by the harness, as timed programs.

    Only implementations the harness verifies as correct get times (a wrong program's speed is
    meaningless). ``provenance`` defaults to ``estimated`` on the CPU back-end and ``measured``
    otherwise. Returns ``(programs, notes)`` where notes say what was left out and why. With a
    ``store`` every evaluation is cached by content.
    """
    from veriforge.cuda.evaluate.harness import evaluate, resolve_task

    spec = resolve_task(task)
    prov = provenance or ("estimated" if backend == "cpu" else "measured")
    task_key = f"{spec.family}/{spec.id}"  # ids repeat across families (c2cuda/gemv, torch2cuda/gemv)
    notes: list[str] = []

    def one(impl: Any) -> tuple[Any, Any]:
        try:
            return impl, evaluate(spec, spec.folder / impl.file, backend, store=store,
                                  configs=list(configs) if configs else None)
        except Exception as exc:  # one failing implementation must not stop the others
            return impl, exc

    impls = list(spec.implementations)
    if jobs > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(one, impls))
    else:
        results = [one(i) for i in impls]
    out: list[TimedProgram] = []
    for impl, res in results:
        if isinstance(res, Exception):
            notes.append(f"{task_key}/{impl.name}: evaluation raised {type(res).__name__}: {res}")
            continue
        if not res.verdict.correct:
            notes.append(f"{task_key}/{impl.name}: not correct ({res.verdict.reason[:120]})")
            continue
        times, clock = _times(res.measurements, prov)
        if not times:
            notes.append(f"{task_key}/{impl.name}: no {prov} time")
            continue
        out.append(TimedProgram(task=task_key, name=impl.name, source=(spec.folder / impl.file).read_text(),
                                times=times, provenance=prov, clock=clock, strategy=impl.strategy,
                                quality=impl.quality))
    return out, notes


def _times(measurements: Iterable[Any], provenance: str) -> tuple[dict[str, float], str]:
    """``{config: time_s}`` of one provenance (the last per config) and the clock that made them."""
    times: dict[str, float] = {}
    clocks: set[str] = set()
    for m in measurements:
        name = m.name if hasattr(m, "name") else m.get("name")
        prov = m.provenance if hasattr(m, "provenance") else m.get("provenance")
        if name != "time_s" or prov != provenance:
            continue
        details = (m.details if hasattr(m, "details") else m.get("details")) or {}
        cfg = details.get("config")
        if cfg is None:
            continue
        times[str(cfg)] = float(m.value if hasattr(m, "value") else m.get("value"))
        clocks.add(str(details.get("gpu") or (m.backend if hasattr(m, "backend") else m.get("backend")) or ""))
    return times, ",".join(sorted(clocks))


def pairs_from_tasks(tasks: Iterable[Any], *, backend: str = "cpu", store: Any = None, min_speedup: float = 1.1,
                     configs: Sequence[str] | None = None, jobs: int = 1,
                     on_task: Callable[[str, int, list[str]], None] | None = None,
                     ) -> tuple[list[PairRecord], list[str]]:
    """Pairs from each task's implementations (:func:`task_programs`); ``(pairs, notes)``.

    ``on_task(task_id, n_pairs, notes)`` is called after each task (progress reporting).
    """
    pairs: list[PairRecord] = []
    notes: list[str] = []
    for task in tasks:
        progs, why = task_programs(task, backend=backend, store=store, configs=configs, jobs=jobs)
        mine = pairs_from_programs(progs, min_speedup=min_speedup)
        pairs += mine
        notes += why
        if on_task is not None:
            on_task(progs[0].task if progs else str(task), len(mine), why)
    return pairs, notes


def pairs_from_rows(rows: Iterable[Mapping[str, Any]], *, min_speedup: float = 1.1,
                    verified_only: bool = True) -> list[PairRecord]:
    """Pairs from dataset rows (one task per row; the shape is in docs/cudaperf-rank.md)::

        {"task_id": "gen/saxpy/17", "implementations": [
            {"name": "naive", "strategy": "naive", "quality": 1, "source": "...", "verified": true,
             "times": {"small": {"time_s": 3.1e-6, "provenance": "estimated", "gpu": "H100-SXM"}, ...},
             "features": {...}}]}          # optional: analysis features in the shared vocabulary

    ``times`` values may also be bare seconds with a row-level or implementation-level
    ``provenance`` (default ``estimated``). Rows exported by ``veriforge cudaperf dataset build``
    (``implementations[].estimates``: ``[{config, time_s, provenance, gpu, cost_model, status}]``)
    are read as they are; the clock is the GPU and the cost-model version, so estimates of different
    models are never paired. Unverified implementations are skipped.
    """
    programs: list[TimedProgram] = []
    for r, row in enumerate(rows):
        task = row.get("task_id") or row.get("id") or row.get("task")
        if row.get("kind") and task and "/" not in str(task):
            task = f"{row['kind']}/{task}"
        impls = row.get("implementations")
        if not task or not isinstance(impls, list):
            raise PairError(f"row {r}: needs `task_id` and an `implementations` list")
        for impl in impls:
            if verified_only and not impl.get("verified", True):
                continue
            if "times" not in impl and isinstance(impl.get("estimates"), list):  # the dataset export's shape
                impl = {**impl, "times": {str(e.get("config")): {
                    "time_s": e.get("time_s"), "provenance": e.get("provenance") or "estimated",
                    "gpu": f"{e.get('gpu') or ''}:{e.get('cost_model') or ''}"} for e in impl["estimates"]}}
            if "source" not in impl or "times" not in impl:
                raise PairError(f"row {r} ({task}): implementation {impl.get('name')!r} needs `source` and `times`")
            by_key: dict[tuple[str, str], dict[str, float]] = {}
            default_prov = str(impl.get("provenance") or row.get("provenance") or "estimated")
            for cfg, t in dict(impl["times"]).items():
                if isinstance(t, Mapping):
                    value, prov = t.get("time_s"), str(t.get("provenance") or default_prov)
                    clock = str(t.get("gpu") or t.get("clock") or "")
                else:
                    value, prov, clock = t, default_prov, str(row.get("gpu") or "")
                if value is None:
                    continue
                by_key.setdefault((prov, clock), {})[str(cfg)] = float(value)
            for (prov, clock), times in by_key.items():
                programs.append(TimedProgram(task=str(task), name=str(impl.get("name", "?")),
                                             source=str(impl["source"]), times=times, provenance=prov, clock=clock,
                                             strategy=str(impl.get("strategy", "")), quality=impl.get("quality"),
                                             analysis=impl.get("features")))
    return pairs_from_programs(programs, min_speedup=min_speedup)


def pairs_from_store(store: Any, *, min_speedup: float = 1.1, provenance: str | None = None,
                     kind: str = "cuda-eval") -> list[PairRecord]:
    """Pairs from the correct evaluations stored in a run store (the harness keeps each
    candidate's source and its analysis features with the result). The same candidate evaluated
    several times counts once (its latest result); ``provenance`` restricts to one kind of time."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for _key, _kind, res in store.iter_evaluations(kind):
        verdict = res.get("verdict") or {}
        details = res.get("details") or {}
        if not verdict.get("correct") or not details.get("candidate_source"):
            continue
        family = details.get("task_family")
        task = f"{family}/{res.get('task_id')}" if family else str(res.get("task_id"))
        latest[(task, str(res.get("candidate_hash")))] = res
    programs: list[TimedProgram] = []
    for (task, chash), res in latest.items():
        provs = {m.get("provenance") for m in res.get("measurements", []) if m.get("name") == "time_s"}
        for prov in sorted(p for p in provs if p and (provenance is None or p == provenance)):
            times, clock = _times(res.get("measurements", []), prov)
            if times:
                programs.append(TimedProgram(task=task, name=chash[:12], source=res["details"]["candidate_source"],
                                             times=times, provenance=prov, clock=clock,
                                             analysis=res.get("features") or None))
    return pairs_from_programs(programs, min_speedup=min_speedup)


# ------------------------------------------------------------------------------------------ files


def write_pairs(pairs: Iterable[PairRecord], path: str | Path) -> int:
    """Write pairs as JSONL; returns how many."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for p in pairs:
            fh.write(json.dumps(p.to_dict(), sort_keys=True) + "\n")
            n += 1
    return n


def read_pairs(path: str | Path) -> list[PairRecord]:
    """Read a JSONL pair file (blank lines skipped; a malformed line raises with its number)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(PairRecord.from_dict(json.loads(line)))
            except (json.JSONDecodeError, PairError) as exc:
                raise PairError(f"{path}:{i}: {exc}") from exc
    return out


def kfold_by_task(pairs: Sequence[PairRecord], k: int = 5, seed: int = 0
                  ) -> list[tuple[list[PairRecord], list[PairRecord]]]:
    """``k`` (train, held-out) splits where each task's pairs are all on one side (held-out
    accuracy then measures transfer to unseen tasks; a split of pairs would leak each task's
    programs into both halves). Every task is held out exactly once."""
    tasks = sorted({p.task for p in pairs})
    if len(tasks) < 2:
        raise PairError("a split by task needs pairs from at least two tasks")
    k = max(2, min(k, len(tasks)))
    random.Random(seed).shuffle(tasks)
    folds = [set(tasks[i::k]) for i in range(k)]
    return [([p for p in pairs if p.task not in f], [p for p in pairs if p.task in f]) for f in folds]
