"""``veriforge cudaperf rank``: build pairs, train, evaluate and apply CudaPerf's offline rankers
(docs/cudaperf-rank.md).

Exit codes: 0 success, 1 nothing usable came out (no pairs), 2 bad arguments or files. Heavy
imports (numpy, torch, TRL) happen inside the commands.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["register"]

rank_app = typer.Typer(help="Offline pairwise rankers: (faster, slower) pairs, feature and LM rankers.",
                       no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add ``rank`` to the ``veriforge cudaperf`` app."""
    app.add_typer(rank_app, name="rank")


def _fail(text: str, code: int = 2) -> None:
    typer.echo(f"error: {text}", err=True)
    raise typer.Exit(code)


def _task_list(spec: str) -> list[str]:
    """``all``, ``c2cuda``, ``torch2cuda`` (bundled sets) or comma-separated ids / folders."""
    from veriforge.cuda.tasks.load import bundled_tasks

    out: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if part in ("all", "bundled"):
            out += [str(p) for p in bundled_tasks()]
        elif part in ("c2cuda", "torch2cuda"):
            out += [str(p) for p in bundled_tasks(part)]
        else:
            out.append(part)
    return out


@rank_app.command("pairs")
def pairs_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="pair file to write (JSONL)")],
    tasks: Annotated[str, typer.Option("--tasks", help="task ids/folders, comma-separated; 'all', 'c2cuda' or "
                                       "'torch2cuda' for the bundled sets")] = "",
    rows: Annotated[Path | None, typer.Option("--rows", help="dataset rows (JSONL) instead of tasks")] = None,
    store: Annotated[Path | None, typer.Option("--store", help="run store: caches evaluations; with --from-store "
                                               "also the source of pairs")] = None,
    from_store: Annotated[bool, typer.Option("--from-store", help="pairs from the store's evaluations")] = False,
    backend: Annotated[str | None, typer.Option("--backend", help="cpu (estimated times) or gpu (measured; "
                                                "default: setting cuda.backend, cpu)")] = None,
    min_speedup: Annotated[float, typer.Option("--min-speedup", help="label only pairs this far apart")] = 1.1,
    configs: Annotated[str, typer.Option("--configs", help="with --tasks: evaluate only these configurations "
                                         "(comma-separated; default all)")] = "",
    provenance: Annotated[str | None, typer.Option("--provenance", help="with --from-store: only this kind "
                                                   "of time (measured, estimated, emulated)")] = None,
) -> None:
    """Build (faster, slower) pairs per task and configuration."""
    from veriforge.core.config import active_settings
    from veriforge.cudaperf.pairs import PairError, pairs_from_rows, pairs_from_store, pairs_from_tasks, write_pairs

    backend = backend or active_settings().cuda.backend
    if sum(bool(x) for x in (tasks, rows, from_store)) != 1:
        _fail("give exactly one source of pairs: --tasks, --rows or --from-store")
    if from_store and store is None:
        _fail("--from-store needs --store PATH")
    if min_speedup < 1.0:
        _fail("--min-speedup must be at least 1")
    from veriforge.cli.preflight import OutputLocationError, prepare_out

    try:  # checked before any task is evaluated: an unusable --out fails now, not after the work
        lock = prepare_out(out, command="veriforge cudaperf rank pairs", is_file=True)
    except OutputLocationError as exc:
        _fail(str(exc))
    with lock:
        started = time.perf_counter()
        run_store: Any = None
        if store is not None:
            from veriforge.core.store import RunStore

            run_store = RunStore(store)
        notes: list[str] = []
        try:
            if rows is not None:
                if not rows.is_file():
                    _fail(f"no such file: {rows}")
                with open(rows, encoding="utf-8") as fh:
                    data = [json.loads(line) for line in fh if line.strip()]
                pairs = pairs_from_rows(data, min_speedup=min_speedup)
            elif from_store:
                pairs = pairs_from_store(run_store, min_speedup=min_speedup, provenance=provenance)
            else:
                ids = _task_list(tasks)

                def progress(task: str, n: int, why: list[str]) -> None:
                    typer.echo(f"  {task}: {n} pairs" + (f" ({len(why)} left out)" if why else ""), err=True)

                pairs, notes = pairs_from_tasks(ids, backend=backend, store=run_store, min_speedup=min_speedup,
                                                configs=[c for c in configs.split(",") if c] or None, on_task=progress)
        except (PairError, json.JSONDecodeError) as exc:
            _fail(str(exc))
        except Exception as exc:  # unknown task ids and the like: a clear message, not a traceback
            from veriforge.errors import VeriforgeError

            if isinstance(exc, VeriforgeError | FileNotFoundError):
                _fail(f"{type(exc).__name__}: {exc}")
            raise
        n = write_pairs(pairs, out)
        for note in notes:
            typer.echo(f"  note: {note}", err=True)
        provs = sorted({p.provenance for p in pairs})
        typer.echo(f"{n} pairs from {len({p.task for p in pairs})} tasks ({', '.join(provs) or 'none'}) -> {out} "
                   f"[{time.perf_counter() - started:.1f} s]")
        if n == 0:
            raise typer.Exit(1)


def _read(path: Path) -> list[Any]:
    from veriforge.cudaperf.pairs import PairError, read_pairs

    if not path.is_file():
        _fail(f"no such file: {path}")
    try:
        return read_pairs(path)
    except PairError as exc:
        _fail(str(exc))
    return []


@rank_app.command("train")
def train_cmd(
    pairs: Annotated[Path, typer.Option("--pairs", help="pair file (JSONL) from `rank pairs`")],
    out: Annotated[Path, typer.Option("--out", "-o", help="feature: a JSON file; lm: a directory")],
    kind: Annotated[str, typer.Option("--kind", help="feature or lm")] = "feature",
    model: Annotated[str, typer.Option("--model", help="feature: logistic or ranknet")] = "logistic",
    features: Annotated[str, typer.Option("--features", help="feature: all, text or analysis")] = "all",
    base_model: Annotated[str, typer.Option("--base-model", help="lm: 'tiny' (random, tests) or an HF path")] = "tiny",
    steps: Annotated[int, typer.Option("--steps", help="lm: optimisation steps (-1: --epochs)")] = -1,
    epochs: Annotated[float, typer.Option("--epochs", help="lm: passes over the pairs")] = 1.0,
    batch_size: Annotated[int, typer.Option("--batch-size", help="lm: pairs per step")] = 4,
    lr: Annotated[float, typer.Option("--lr", help="lm: learning rate")] = 1e-4,
    max_length: Annotated[int, typer.Option("--max-length", help="lm: tokens kept per program")] = 512,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """Train a feature ranker (logistic/RankNet) or an LM ranker (TRL RewardTrainer) on pairs."""
    from veriforge.cli.preflight import OutputLocationError, prepare_out
    from veriforge.cudaperf.ranker import FeatureRanker, RankerError

    data = _read(pairs)
    if not data:
        _fail(f"{pairs} holds no pairs", 1)
    try:  # before training: an unusable --out fails now, not after the work
        lock = prepare_out(out, command="veriforge cudaperf rank train", is_file=kind != "lm")
    except OutputLocationError as exc:
        _fail(str(exc))
    started = time.perf_counter()
    try:
        if kind == "feature":
            params = {"seed": seed} if model == "ranknet" else {}
            ranker = FeatureRanker(model, features=features, **params).fit(data)
            ranker.save(out)
            typer.echo(f"{model} ranker on {len(data)} pairs ({features} features) -> {out} "
                       f"[{time.perf_counter() - started:.1f} s]")
        elif kind == "lm":
            from veriforge.cudaperf.lm_ranker import LMRanker

            lm = LMRanker.train(data, base_model=base_model, output_dir=out / "trainer", max_steps=steps,
                                epochs=epochs, batch_size=batch_size, learning_rate=lr, max_length=max_length,
                                seed=seed)
            lm.save(out)
            losses = [h["loss"] for h in lm.log_history if "loss" in h]
            typer.echo(f"LM ranker ({base_model}) on {len(data)} pairs, {len(losses)} steps, loss "
                       f"{losses[0]:.4f} -> {losses[-1]:.4f} -> {out} [{time.perf_counter() - started:.1f} s]"
                       if losses else f"LM ranker -> {out}")
        else:
            _fail(f"unknown --kind {kind!r}; known: feature, lm")
    except RankerError as exc:
        _fail(str(exc))
    finally:
        lock.release()


@rank_app.command("eval")
def eval_cmd(
    model: Annotated[Path, typer.Option("--model", help="a trained ranker (file or directory)")],
    pairs: Annotated[Path, typer.Option("--pairs", help="held-out pair file (JSONL)")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Pairwise accuracy of a ranker on held-out pairs, overall and per provenance of the labels."""
    from veriforge.cudaperf.ranker import (
        FeatureRanker,
        RankerError,
        load_ranker,
        pair_scores_by_sources,
        pairwise_accuracy,
    )

    data = _read(pairs)
    try:
        ranker = load_ranker(model)
    except RankerError as exc:
        _fail(str(exc))
    scores = ranker.pair_scores(data) if isinstance(ranker, FeatureRanker) else pair_scores_by_sources(ranker, data)
    groups: dict[str, list[tuple[float, float]]] = {"all": scores}
    for p, s in zip(data, scores, strict=True):
        groups.setdefault(p.provenance, []).append(s)
    summary = {k: {"pairs": len(v), "accuracy": pairwise_accuracy(v)} for k, v in groups.items()}
    if as_json:
        typer.echo(json.dumps({"model": str(model), "pairs": str(pairs), "tasks": len({p.task for p in data}),
                               "groups": summary}))
        return
    for k, v in summary.items():
        typer.echo(f"{k:<10} {v['pairs']:>6} pairs  accuracy {v['accuracy']:.3f}")


@rank_app.command("score")
def score_cmd(
    model: Annotated[Path, typer.Option("--model", help="a trained ranker (file or directory)")],
    files: Annotated[list[Path], typer.Argument(help="candidate source files")],
    task: Annotated[str | None, typer.Option("--task", help="the task the files are for (analysis features)")] = None,
    config: Annotated[str | None, typer.Option("--config", help="the task configuration (default: last)")] = None,
    top: Annotated[int | None, typer.Option("--top", help="print only the k best")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Score candidate files, best first (higher = predicted faster; compare within one task)."""
    from veriforge.cudaperf.ranker import RankerError, load_ranker, rank_candidates

    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        _fail(f"no such file: {', '.join(missing)}")
    try:
        ranker = load_ranker(model)
        order = rank_candidates([f.read_text() for f in files], ranker, task=task, config=config)
    except RankerError as exc:
        _fail(str(exc))
    order = order[:top] if top else order
    if as_json:
        typer.echo(json.dumps([{"file": str(files[i]), "score": s} for i, s in order]))
        return
    for i, s in order:
        typer.echo(f"{s:+.4f}  {files[i]}")
    sys.stdout.flush()
