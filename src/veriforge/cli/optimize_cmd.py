"""``veriforge optimize``: OptiML-X on a kernel or task, with a live progress display and a report.

With no argument (or ``--demo``) it optimises the bundled naive ``matmul_transposed_b`` kernel with
the built-in edit operators on the CPU back-end: no GPU, no model, no network, about a minute on
two cores, and a verified estimated speedup with an HTML report in ``./optiml-out``.
Errors veriforge raises on purpose (no task for a standalone kernel, a bad option) print one
``error:`` line and exit with code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from veriforge.errors import VeriforgeError

DEMO_TASK = "c2cuda/matmul_transposed_b"
DEMO_BUDGET = 20


def _fail(text: str, code: int = 2) -> None:
    typer.echo(f"error: {text}", err=True)
    raise typer.Exit(code)


def _fmt_time(t: float) -> str:
    return f"{t * 1e6:.2f} µs" if t < 1e-3 else f"{t * 1e3:.3f} ms"


def _status(estimate: dict[str, Any] | None) -> str:
    return str((estimate or {}).get("status") or "–")


def estimate_lines(estimate: dict[str, Any] | None) -> list[str]:
    """The worst-case and unknown parts of an estimate, one line each (per configuration)."""
    lines = []
    for name, rec in ((estimate or {}).get("configs") or {}).items():
        lines += [f"[{name}] worst case: {w}" for w in rec.get("worst_case") or []]
        lines += [f"[{name}] unknown: {u}" for u in rec.get("unknown") or []]
    return lines[:10]


def optimize_cmd(
    target: Annotated[str | None, typer.Argument(
        help="KERNEL.cu (with --task unless it lives in a task folder) or a task id/folder; "
             "omit for the demo.")] = None,
    task: Annotated[str | None, typer.Option("--task", "-t", help="Task (bundled id or folder) that "
                                             "verifies the kernel: reference + input configurations.")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Also propose edits with this model "
                                              "(built-in operators always run).")] = None,
    backend: Annotated[str, typer.Option("--backend", "-b", help="cpu (estimated times) or gpu (measured).")] = "cpu",
    budget: Annotated[int | None, typer.Option("--budget", "-n", help="Evaluations (distinct kernels).")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="Stop dispatching after S seconds.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path("optiml-out"),
    algo: Annotated[str, typer.Option("--algo", help="mcts, random or greedy (hill climbing).")] = "mcts",
    seed: Annotated[int, typer.Option("--seed", help="Search seed (runs are deterministic).")] = 0,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Resume (or name) a run in the run store.")] = None,
    gpu: Annotated[str, typer.Option("--gpu", help="GPU the cost model estimates for.")] = "H100-SXM",
    demo: Annotated[bool, typer.Option("--demo", help="Run the bundled demo (the default without TARGET).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No live progress display.")] = False,
) -> None:
    """Make a CUDA kernel faster by MCTS over verified edits (OptiML-X); writes best.cu, tree.json and
    report.html to --out."""
    from rich.console import Console

    console = Console()
    if demo or (target is None and task is None):
        target, task = DEMO_TASK, None
        budget = budget if budget is not None else DEMO_BUDGET
        console.print(f"[bold]OptiML-X demo[/]: the naive kernel of {DEMO_TASK}, built-in edit operators, "
                      "CPU back-end (estimated times; no GPU, no model, no network)")
    try:
        _run(console, target, task, model, backend, budget, time_limit, out, algo, seed, run_id, gpu, quiet)
    except VeriforgeError as exc:
        _fail(str(exc))


def _run(console: Any, target: str | None, task: str | None, model: str | None, backend: str,
         budget: int | None, time_limit: float | None, out: Path, algo: str, seed: int,
         run_id: str | None, gpu: str, quiet: bool) -> None:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from veriforge.core.store import RunStore
    from veriforge.optiml.report import write_outputs
    from veriforge.optiml.xsearch import XSearchSettings, optimize, resolve_inputs

    if budget is None and time_limit is None:
        budget = 40
    settings = XSearchSettings(algorithm=algo, max_evaluations=budget, max_seconds=time_limit, seed=seed,
                               backend=backend, gpu=gpu)
    spec, _, label = resolve_inputs(target, task)
    proposers = None
    if model:
        from veriforge.llm.factory import create_client
        from veriforge.optiml.model_proposer import proposers_with_model

        proposers = proposers_with_model(create_client(model), spec)
    store = RunStore()
    total = budget or 0
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("best {task.fields[best]}"), TextColumn("[dim]{task.fields[bottleneck]}"),
                  TimeElapsedColumn(), console=console, disable=quiet, transient=False) as bar:
        tid = bar.add_task(f"optimising {label}", total=total or None, best="–", bottleneck="")

        def progress(p: dict[str, Any]) -> None:
            best = "–" if p["best"] is None else f"{p['best']:.4g}"
            bar.update(tid, completed=min(p["calls"], total) if total else p["calls"], best=best,
                       bottleneck=f"bottleneck: {p['bottleneck']}" if p["bottleneck"] else "")

        result = optimize(target, task=task, settings=settings, proposers=proposers, store=store,
                          run_id=run_id, progress=progress)
    paths = write_outputs(result, out)
    start, best = result.start.evaluation.details, result.best.evaluation.details
    table = Table(title=f"OptiML-X · {result.spec.id} · {result.search.algorithm}")
    table.add_column("")
    table.add_column("start")
    table.add_column("best")
    prov = settings.provenance
    table.add_row(f"time ({prov}, geomean)", _fmt_time(result.start_time), _fmt_time(result.best_time))
    table.add_row("speedup", "1.00×", f"[bold green]{result.speedup:.2f}×[/]")
    table.add_row("objective", f"{result.start.evaluation.objective:.4g}", f"{result.best.evaluation.objective:.4g}")
    table.add_row("provenance", prov, prov)
    table.add_row("verified configs", ", ".join(start.get("verified_configs") or []),
                  ", ".join(best.get("verified_configs") or []))
    table.add_row("bottleneck", str(start.get("bottleneck", "")), str(best.get("bottleneck", "")))
    if prov == "estimated":
        table.add_row("estimate status", _status(start.get("estimate")), _status(best.get("estimate")))
    console.print(table)
    for line in estimate_lines(best.get("estimate")):
        console.print(f"  best: {line}", markup=False, highlight=False)
    from veriforge.optiml.report import heldout_line, skips_line

    console.print(f"held-out sizes: {heldout_line(result.heldout)}", markup=False, highlight=False)
    model_line = skips_line(result.proposer_skips, result.proposer_calls)
    if model_line:
        console.print(f"model proposals: {model_line} (reasons in tree.json, proposer_skips)",
                      markup=False, highlight=False)
    st = result.search.stats
    console.print(f"{st.unique_evaluations} kernels evaluated ({st.accepted} accepted, {st.rejected} rejected), "
                  f"run {result.search.run_id}")
    unscored = result.tree_json().get("unscored") or []
    if unscored:
        console.print(f"{len(unscored)} verified kernel(s) without a score (ranked after every scored one):",
                      markup=False, highlight=False)
        for u in unscored[:5]:
            console.print(f"  #{u['id']}: {u['reason']}"[:400], markup=False, highlight=False)
    for what, path in paths.items():
        console.print(f"{what:>7}: {path}")
