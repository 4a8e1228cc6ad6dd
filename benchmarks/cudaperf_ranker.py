"""Held-out pairwise accuracy of CudaPerf's offline rankers, on estimated and on measured labels.

Two label sources, reported separately because they answer different questions:

1. **Estimated labels (bundled tasks).** Every bundled task's implementations (63 tasks,
   ``src/veriforge/data/tasks/``) are evaluated by the harness on the CPU back-end; each verified
   implementation gets the cost model's estimated time at *each* of the task's configurations, and
   pairs are labelled per task and configuration with the 1.1× margin
   (:func:`veriforge.cudaperf.pairs.pairs_from_tasks`). Rankers are trained and evaluated with
   k-fold cross-validation **by task** (every task held out once). Here the cost model's ordering
   *is* the label, so its accuracy is 1 by construction; the question is how much of the cost
   model's judgement a ranker recovers from static features without pricing anything.
2. **Measured labels (published GPU series).** The kernels of ``benchmarks/fidelity/`` (our own
   implementations of public kernels whose run times were published for a GPU; see
   ``benchmarks/costmodel_fidelity.py`` and ``series.toml`` for the citations) give pairs within
   each series labelled by the *published measured* times. Here the cost model (default constants,
   priced on the published GPU) is a real competitor. Rankers are scored after training on all
   bundled pairs (transfer from estimated labels on other tasks to measured labels), and the
   feature rankers also leave-one-series-out on the measured pairs themselves.

Baselines: random (a seeded random score per program; expectation 0.5), the bundled
implementations' hand-written ``quality`` labels (estimated section only), and the cost model.
The LM ranker is a *tiny randomly initialised* Qwen2 (2 layers, width 32) trained for a few dozen
steps with TRL's ``RewardTrainer``: it exercises the pipeline and should be near chance; a real
run uses ``--base-model`` with a pretrained code model.

    .venv/bin/python benchmarks/cudaperf_ranker.py [--folds 5] [--lm-steps 40] [--no-lm] [--no-nvcc]
        [--store .veriforge/cudaperf_ranker.sqlite] [--out benchmarks/results/cudaperf_ranker.txt]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
RESULTS_FILE = ROOT / "benchmarks" / "results" / "cudaperf_ranker.txt"
DEFAULT_STORE = ROOT / ".veriforge" / "cudaperf_ranker.sqlite"

Scores = list[tuple[float, float]]


def _git_describe() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def accuracy(scores: Scores) -> float:
    from veriforge.cudaperf.ranker import pairwise_accuracy

    return pairwise_accuracy(scores)


def random_scores(pairs: Sequence[Any], seed: int) -> Scores:
    """A fixed random score per distinct program (so the same program scores the same in every pair)."""
    rng = random.Random(seed)
    table: dict[str, float] = {}

    def s(src: str) -> float:
        if src not in table:
            table[src] = rng.random()
        return table[src]

    return [(s(p.faster.source), s(p.slower.source)) for p in pairs]


def random_accuracy(pairs: Sequence[Any], repeats: int = 200) -> float:
    """Mean accuracy of ``repeats`` seeded random scorers (what chance gives on these very pairs)."""
    return sum(accuracy(random_scores(pairs, seed)) for seed in range(repeats)) / repeats


def feature_models() -> dict[str, Callable[[], Any]]:
    from veriforge.cudaperf.ranker import FeatureRanker

    return {
        "logistic (text+analysis)": lambda: FeatureRanker("logistic", features="all"),
        "logistic (text only)": lambda: FeatureRanker("logistic", features="text"),
        "ranknet (text+analysis)": lambda: FeatureRanker("ranknet", features="all", seed=0),
    }


def train_lm(pairs: Sequence[Any], steps: int, workdir: Path) -> Any:
    from veriforge.cudaperf.lm_ranker import LMRanker

    return LMRanker.train(pairs, base_model="tiny", output_dir=workdir, max_steps=steps, batch_size=4,
                          learning_rate=5e-4, max_length=384, seed=0)


# ------------------------------------------------------------------------------------------------
# Measured pairs from the published series.


def kernel_text(source: str, kernel: str) -> str:
    """``source`` without the *other* ``__global__`` functions (a file may hold several variants)."""
    spans = []
    for m in re.finditer(r"(?:template\s*<[^>]*>\s*)?__global__[^{;]*?\b(\w+)\s*\(", source):
        name = m.group(1)
        depth, i = 0, source.find("{", m.end())
        if i < 0:
            continue
        j = i
        while j < len(source):
            if source[j] == "{":
                depth += 1
            elif source[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        spans.append((m.start(), j + 1, name))
    out, last = [], 0
    for start, end, name in spans:
        if name != kernel:
            out.append(source[last:start])
            last = end
    out.append(source[last:])
    return "".join(out)


def measured_programs(use_nvcc: bool) -> tuple[list[Any], dict[tuple[str, str], float | None], list[str]]:
    """(timed programs labelled by the published times, cost-model estimate per (series, label), notes)."""
    import costmodel_fidelity as cf

    from veriforge.cudaperf.pairs import TimedProgram

    series = cf.load_series()
    problems = cf.validate_series(series)
    if problems:
        raise SystemExit("series.toml is malformed:\n  " + "\n  ".join(problems))
    entries = cf.build_entries(series, use_nvcc=use_nvcc, progress=False)
    kernels = {(s["id"], k["label"]): k for s in series for k in s["kernels"]}
    programs, estimates, notes = [], {}, []
    for e in entries:
        k = kernels[(e.series, e.label)]
        src = kernel_text((cf.KERNEL_DIR / k["file"]).read_text(), k["kernel"])
        priced = cf.price_entry(e, None)
        estimates[(e.series, e.label)] = priced.time_s
        if priced.time_s is None:
            notes.append(f"{e.series} / {e.label}: cost-model estimate unknown ({'; '.join(priced.why)[:160]})")
        # Features: the analysed launch (a swept block size: the 256-thread launch, the sweep's middle;
        # never the launch the cost model prices fastest, which would leak the cost model's choice).
        runs = [r for r in e.launches if r.report is not None]
        if not runs:
            notes.append(f"{e.series} / {e.label}: no analysis ({e.launches[0].error if e.launches else 'none'})")
            feats = None
        else:
            run = next((r for r in runs if r.block == (256,)), runs[len(runs) // 2])
            feats = dict(run.report.features)
        programs.append(TimedProgram(task=e.series, name=e.label, source=src, times={"published": e.published_s},
                                     provenance="measured", clock=e.gpu, analysis=feats))
    return programs, estimates, notes


# ------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folds", type=int, default=5, help="k of the k-fold split by task")
    ap.add_argument("--lm-steps", type=int, default=40, help="RewardTrainer steps of the tiny LM ranker per fold")
    ap.add_argument("--no-lm", action="store_true", help="skip the LM ranker")
    ap.add_argument("--no-nvcc", action="store_true", help="analyse the published kernels without ptxas")
    ap.add_argument("--tasks", default="all", help="bundled tasks (comma-separated ids; default all)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel evaluations per task")
    ap.add_argument("--store", default=str(DEFAULT_STORE), help="run store caching the harness evaluations")
    ap.add_argument("--out", default=str(RESULTS_FILE), help="results file ('-' for none)")
    ap.add_argument("--pairs-file", default=str(ROOT / ".veriforge" / "cudaperf_ranker_pairs.jsonl"),
                    help="where the bundled pairs are written (and read with --reuse-pairs)")
    ap.add_argument("--reuse-pairs", action="store_true", help="read the bundled pairs from --pairs-file instead "
                    "of evaluating (the pairs record their provenance; the results say so)")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from veriforge.core.store import RunStore
    from veriforge.cuda.tasks.load import bundled_tasks
    from veriforge.cudaperf.pairs import kfold_by_task, pairs_from_programs, pairs_from_tasks, read_pairs, write_pairs
    from veriforge.cudaperf.ranker import pair_scores_by_sources

    started = time.perf_counter()
    store = RunStore(args.store)
    tasks = [str(p) for p in bundled_tasks()] if args.tasks == "all" else args.tasks.split(",")
    n_before = store.count_evaluations()
    if args.reuse_pairs:
        pairs, notes = read_pairs(args.pairs_file), [f"pairs read from {args.pairs_file} (--reuse-pairs)"]
    else:
        pairs, notes = pairs_from_tasks(tasks, store=store, jobs=args.jobs,
                                        on_task=lambda t, n, w: print(f"  {t}: {n} pairs", file=sys.stderr))
        Path(args.pairs_file).parent.mkdir(parents=True, exist_ok=True)
        write_pairs(pairs, args.pairs_file)
    t_pairs = time.perf_counter() - started
    n_tasks = len({p.task for p in pairs})
    lines = ["CudaPerf offline rankers: held-out pairwise accuracy (benchmarks/cudaperf_ranker.py)",
             f"date {time.strftime('%Y-%m-%d %H:%M:%S')}; code {_git_describe()}; {os.cpu_count()} CPU(s)",
             f"command: .venv/bin/python benchmarks/cudaperf_ranker.py {' '.join(argv or sys.argv[1:])}".rstrip(),
             "", "== 1. Estimated labels: bundled tasks, CPU back-end, cost-model estimate per configuration ==",
             f"   {len(tasks)} tasks evaluated by the harness ({store.count_evaluations() - n_before} new evaluations, "
             f"the rest cached in {args.store}); {len(pairs)} pairs (margin >= 1.1x) from {n_tasks} tasks, "
             f"{len({(p.task, p.config) for p in pairs})} task-configurations [{t_pairs:.0f} s]",
             f"   label provenance: {sorted({p.provenance for p in pairs})}, clock {sorted({p.clock for p in pairs})}; "
             "the label IS the cost model's ordering",
             f"   {len(notes)} implementations left out (not verified / no estimate)"]
    lines += [f"     - {n}" for n in notes[:12]] + ([f"     ... {len(notes) - 12} more"] if len(notes) > 12 else [])

    folds = kfold_by_task(pairs, k=args.folds, seed=0)
    models = feature_models()
    per: dict[str, Scores] = {name: [] for name in models}
    per["LM ranker (tiny random Qwen2)"] = []
    lm_losses: list[str] = []
    t0 = time.perf_counter()
    for f, (train, test) in enumerate(folds):
        for name, make in models.items():
            per[name] += make().fit(train).pair_scores(test)
        if not args.no_lm:
            with tempfile.TemporaryDirectory() as tmp:
                lm = train_lm(train, args.lm_steps, Path(tmp))
            losses = [h["loss"] for h in lm.log_history if "loss" in h]
            lm_losses.append(f"fold {f}: loss {losses[0]:.3f} -> {losses[-1]:.3f} ({len(losses)} steps)")
            per["LM ranker (tiny random Qwen2)"] += pair_scores_by_sources(lm, test)
        print(f"  fold {f + 1}/{len(folds)} done [{time.perf_counter() - t0:.0f} s]", file=sys.stderr)
    test_pairs = [p for _, test in folds for p in test]  # every pair exactly once, in fold order
    quality = [((p.faster.quality or 0), (p.slower.quality or 0)) for p in test_pairs]
    rows = [("random (mean of 200 seeds)", random_accuracy(test_pairs), len(test_pairs)),
            ("quality labels (hand-written)", accuracy(quality), len(test_pairs)),
            ("cost model (= the label)", 1.0, len(test_pairs))]
    rows += [(name, accuracy(s), len(s)) for name, s in per.items() if s]
    lines += ["", f"   {len(folds)}-fold by task (each task held out once; pairs of a task never in both halves)",
              f"   {'ranker':<34} {'accuracy':>9} {'pairs':>7}"]
    lines += [f"   {n:<34} {a:>9.3f} {k:>7}" for n, a, k in rows]
    if lm_losses:
        lines.append("   LM ranker training (RewardTrainer, lr 5e-4, batch 4, max 384 tokens): " + "; ".join(lm_losses))
    # per family
    for fam in ("c2cuda", "torch2cuda"):
        idx = [i for i, p in enumerate(test_pairs) if _family(p.task) == fam]
        if idx:
            best = "logistic (text+analysis)"
            lines.append(f"   {fam}: {len(idx)} pairs; logistic (text+analysis) "
                         f"{accuracy([per[best][i] for i in idx]):.3f}, quality labels "
                         f"{accuracy([quality[i] for i in idx]):.3f}")

    # ---------------------------------------------------------------- measured labels
    t1 = time.perf_counter()
    programs, estimates, mnotes = measured_programs(not args.no_nvcc)
    mpairs = pairs_from_programs(programs)
    lines += ["", "== 2. Measured labels: published GPU times of the fidelity series (benchmarks/fidelity/) ==",
              f"   {len(programs)} kernels in {len({p.task for p in programs})} series, {len(mpairs)} pairs "
              f"(margin >= 1.1x, within a series); ptxas {'off' if args.no_nvcc else 'on'} "
              f"[{time.perf_counter() - t1:.0f} s]",
              "   label provenance: measured (published tables, one GPU per series; citations in series.toml)"]
    lines += [f"     - {n}" for n in mnotes]
    by_label = {(p.task, p.name): estimates.get((p.task, p.name)) for p in programs}
    cm = [(-(by_label[(p.task, p.faster.name)] or math.nan), -(by_label[(p.task, p.slower.name)] or math.nan))
          for p in mpairs]
    cm_known = [s for s in cm if not any(math.isnan(v) for v in s)]
    cm = [(0.0, 0.0) if any(math.isnan(v) for v in s) else s for s in cm]  # unknown estimate: a tie
    mrows = [("random (mean of 200 seeds)", random_accuracy(mpairs), len(mpairs)),
             ("cost model (default constants)", accuracy(cm), len(mpairs))]
    if len(cm_known) < len(cm):
        mrows.append(("cost model, pairs it can price", accuracy(cm_known), len(cm_known)))
    transfer: dict[str, Scores] = {}
    for name, make in models.items():
        transfer[name] = make().fit(pairs).pair_scores(mpairs)
        mrows.append((f"{name}, trained on bundled", accuracy(transfer[name]), len(mpairs)))
    if not args.no_lm:
        with tempfile.TemporaryDirectory() as tmp:
            lm = train_lm(pairs, args.lm_steps, Path(tmp))
        lm_scores = pair_scores_by_sources(lm, mpairs)
        mrows.append(("LM ranker (tiny), trained on bundled", accuracy(lm_scores), len(mpairs)))
    series_ids = sorted({p.task for p in mpairs})
    for name, make in models.items():
        sc: Scores = []
        for sid in series_ids:
            train = [p for p in mpairs if p.task != sid]
            sc += make().fit(train).pair_scores([p for p in mpairs if p.task == sid])
        mrows.append((f"{name}, leave-one-series-out", accuracy(sc), len(sc)))
    lines += [f"   {'ranker':<52} {'accuracy':>9} {'pairs':>7}"]
    lines += [f"   {n:<52} {a:>9.3f} {k:>7}" for n, a, k in mrows]
    lines.append("   per series (pairs; cost model / logistic text+analysis trained on bundled / random):")
    for sid in series_ids:
        idx = [i for i, p in enumerate(mpairs) if p.task == sid]
        lines.append(f"     {sid:<32} {len(idx):>4}  {accuracy([cm[i] for i in idx]):.3f} / "
                     f"{accuracy([transfer['logistic (text+analysis)'][i] for i in idx]):.3f} / "
                     f"{random_accuracy([mpairs[i] for i in idx]):.3f}")
    lines += ["", f"runtime {time.perf_counter() - started:.0f} s"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out != "-":
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


_FAMILY: dict[str, str] = {}


def _family(task: str) -> str:
    if task not in _FAMILY:
        from veriforge.cuda.evaluate.harness import resolve_task

        try:
            _FAMILY[task] = resolve_task(task).family
        except Exception:
            _FAMILY[task] = "?"
    return _FAMILY[task]


if __name__ == "__main__":
    sys.exit(main())
