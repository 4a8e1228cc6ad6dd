"""``veriforge eval TASK CANDIDATE``: evaluate one candidate and print a readable verdict.

TASK is a bundled task id, ``family/id`` or a task folder; CANDIDATE a ``.cu`` (C→CUDA) or
``.py`` (PyTorch→CUDA) file. Results are cached in the run store (``--no-cache`` to skip).
Exit codes: 0 correct; 1 incorrect, rejected or not compiled; 2 bad arguments or no back-end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from veriforge.core import defaults


def eval_cmd(
    task: Annotated[str, typer.Argument(help="task id, family/id, or task folder")],
    candidate: Annotated[Path, typer.Argument(help="candidate source file (.cu or .py)")],
    backend: Annotated[str | None, typer.Option("--backend", "-b", help="cpu or gpu (default: setting "
                                                f"cuda.backend, {defaults.CUDA_BACKEND})")] = None,
    profile: Annotated[bool, typer.Option("--profile", help="Nsight Compute profile (GPU back-end)")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the full result as JSON")] = False,
    trials: Annotated[int, typer.Option("--trials", help="fresh-input trials per configuration (>= 2)")] = 2,
    config: Annotated[list[str] | None, typer.Option("--config", "-c", help="only these configurations")] = None,
    memcheck: Annotated[bool, typer.Option("--memcheck", help="check every memory access (slower)")] = False,
    timeout: Annotated[float | None, typer.Option("--timeout", help="seconds for the whole run")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="do not use the run store")] = False,
) -> None:
    """Evaluate CANDIDATE on TASK: correctness on every configuration, anti-cheat, time."""
    from veriforge.core.config import active_settings
    from veriforge.errors import VeriforgeError

    backend = backend or active_settings().cuda.backend
    if not candidate.is_file():
        typer.echo(f"error: {candidate} is not a file", err=True)
        raise typer.Exit(2)
    if backend not in ("cpu", "gpu"):
        typer.echo(f"error: --backend must be cpu or gpu, got {backend!r}", err=True)
        raise typer.Exit(2)
    from veriforge.cuda.evaluate.harness import evaluate

    task = _family_for(task, candidate)
    store = None
    try:
        if not no_cache:
            from veriforge.core.store import RunStore

            store = RunStore()
        res = evaluate(task, candidate, backend, store=store, trials=trials, timeout=timeout, profile=profile,
                       configs=config or None, memcheck=memcheck)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except VeriforgeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    finally:
        if store is not None:
            store.close()
    if as_json:
        typer.echo(json.dumps(res.to_dict(), indent=2))
    else:
        v = res.verdict
        status = "CORRECT" if v.correct else ("REJECTED" if v.rejected else
                                              ("DID NOT COMPILE" if not v.compiled else "INCORRECT"))
        if not v.correct and res.details.get("status") == "crash":
            status = f"CRASHED ({res.details.get('crash') or 'abnormal end'})"
        typer.echo(f"{res.task_id}: {status}" + (" (cached)" if res.cached else "") + f"  [backend {res.backend}]")
        sizes = res.details.get("sizes") or {}
        for r in v.results:
            err = f"max abs {r.max_abs_error:.3g}" if r.max_abs_error is not None else ""
            if r.max_rel_error is not None:
                err += f", max rel {r.max_rel_error:.3g}"
            typer.echo(f"  {r.config:<14} {'ok' if r.passed else 'FAIL':<5} {err}  {_sizes(sizes, r.config)}  "
                       f"{r.message}".rstrip())
        tols = res.details.get("tolerances") or {}
        if tols:
            typer.echo("tolerance: " + "; ".join(
                f"{name} exact" if tol == "exact" else f"{name} rtol={tol['rtol']:g}, atol={tol['atol']:g} x max|ref|"
                for name, tol in tols.items()) + "  (rel error = |err| / max(|ref|, atol x max|ref|))")
        if v.reason:
            typer.echo(f"reason: {v.reason}")
        estimate = res.details.get("estimate")
        for m in res.measurements:
            if m.name != "time_s" or (estimate and m.provenance == "estimated"):
                continue  # estimated times are printed per configuration below, with their status
            cfg = str(m.details.get("config", ""))
            typer.echo(f"  time[{cfg}] = {m.value * 1e6:.2f} us  ({_provenance(m)}; {_sizes(sizes, cfg)})")
        if estimate:
            _print_estimate(estimate, sizes)
        else:
            for note in res.details.get("estimate_notes", []):
                typer.echo(f"  note: {note}")
        iso = res.details.get("isolation")
        if iso:
            missing = "; ".join(iso.get("missing") or [])
            typer.echo("isolation: " + ("full (uid, filesystem, network, process tree)" if iso.get("full")
                                        else f"PARTIAL — missing {missing}"))
        if "input_secret" in res.details:
            typer.echo(f"inputs: secret {res.details['input_secret']} (reproduce with the Python API: secret=…)")
    raise typer.Exit(0 if res.verdict.correct else 1)


def _sizes(sizes: dict, config: str) -> str:
    """``n=1024, alpha=2.5``: the problem size of ``config`` (a time means little without it)."""
    values = sizes.get(config)
    if not values:
        return ""
    return "sizes " + ", ".join(f"{k}={v}" for k, v in values.items())


def _provenance(m: Any) -> str:
    """Where a time came from and on which hardware, so times of different kinds never sit
    unlabelled side by side: an emulated CPU time is not a GPU time."""
    if m.provenance == "emulated":
        return f"emulated on this machine's CPU ({m.backend}), not a GPU time"
    if m.provenance == "measured":
        device = m.details.get("device") or m.backend
        return f"measured on {device}"
    return f"{m.provenance}, {m.backend}"


def _print_estimate(estimate: dict, sizes: dict | None = None) -> None:
    """Each configuration's estimated time (or unknown, with a lower bound), status and reasons,
    labelled with the GPU it is estimated for and the sizes it was made for."""
    configs = estimate.get("configs") or {}
    order = [n for n in estimate.get("config_names") or [] if n in configs]
    configs = {n: configs[n] for n in order + [n for n in configs if n not in order]}
    head = f"estimate ({estimate.get('model')}, {estimate.get('gpu')}): {estimate.get('status')}"
    if not estimate.get("complete"):
        missing = [n for n, c in configs.items() if c.get("time_s") is None]
        head += f" — no estimated score: unknown on {', '.join(missing)}"
    typer.echo(head)
    for name, c in configs.items():
        if c.get("time_s") is not None:
            value = f"{c['time_s'] * 1e6:.2f} us"
        else:
            lb = c.get("lower_bound_s")
            value = "unknown" + (f" — lower bound {lb * 1e6:.2f} us" if lb is not None else "")
        launches = len(c.get("launches") or [])
        size = _sizes(sizes or {}, name)
        typer.echo(f"  time[{name}] = {value}  (estimated for {estimate.get('gpu')}, {c.get('status')}, "
                   f"{launches} launch(es){'; ' + size if size else ''})")
        for u in c.get("unknown") or []:
            typer.echo(f"      unknown: {u}")
        for w in c.get("worst_case") or []:
            typer.echo(f"      worst case: {w}")


def _family_for(task: str, candidate: Path) -> str:
    """A bare id bundled in several families (``gemv``) means the family the candidate's file
    belongs to: a ``.cu`` file is a C→CUDA candidate, a ``.py`` file a PyTorch→CUDA one. Said in
    one line; anything else is left for the task loader (which names the choices)."""
    from veriforge.cuda.tasks.load import bundled_families

    families = bundled_families(task)
    wanted = {".cu": "c2cuda", ".cuh": "c2cuda", ".py": "torch2cuda"}.get(candidate.suffix)
    if len(families) > 1 and wanted in families:
        typer.echo(f"task {task}: using {wanted}/{task} ({candidate.name} is a {candidate.suffix} candidate)",
                   err=True)
        return f"{wanted}/{task}"
    return task

