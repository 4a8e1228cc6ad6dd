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

from veriforge.core import defaults
from veriforge.errors import VeriforgeError

DEMO_TASK = "c2cuda/matmul_transposed_b"
DEMO_BUDGET = defaults.OPTIML_DEMO_BUDGET


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


def _print_user_task(console: Any, built: Any) -> None:
    spec = built.spec
    parts = []
    for p in spec.params:
        parts.append(f"{p.name}: {p.role} {p.type} [{p.size}] {p.init}" if p.role != "scalar" else f"{p.name}: scalar")
    given = (spec.timing or spec.configs)[0].variables
    ref = "NumPy function" if spec.folder is not None and (spec.folder / "reference_numpy.py").is_file() \
        else "the original kernel"
    console.print(f"task {spec.id} (reference: {ref}; folder {spec.folder})", markup=False, highlight=False)
    console.print(f"  params: {'; '.join(parts)}", markup=False, highlight=False)
    console.print(f"  launch: {built.kernel}<<<({', '.join(built.grid)}), ({', '.join(built.block)})>>>",
                  markup=False, highlight=False)
    console.print("  configs: " + "; ".join(f"{c.name} " + ", ".join(f"{k}={v}" for k, v in c.variables.items())
                                            for c in spec.configs) + f" (given: {given})", markup=False,
                  highlight=False)
    for name, why in built.dropped.items():
        console.print(f"  dropped size {name}: {why}", markup=False, highlight=False)
    emu = built.emulation
    if emu:
        took = "more than the probe's limit" if emu["given_seconds"] is None else f"{emu['given_seconds']:.1f} s"
        shrunk = ", ".join(f"{k}={v}" for k, v in emu["shrunk"].items())
        console.print(f"  the given sizes are timed (estimated) only: one run of the original takes {took} on the "
                      f"CPU runtime there (budget {emu['budget_s']:g} s, --emulation-budget); correctness is checked "
                      f"at shrunk sizes ({shrunk}) and the sizes derived from them", markup=False, highlight=False)


def _write_user_kernel(console: Any, built: Any, best_source: str, path: Path) -> Path:
    """The best kernel as a drop-in file with the input's kernel name and signature."""
    from veriforge.cuda.tasks.ctypes_map import CSignatureError, find_signature, same_type
    from veriforge.optiml.user_kernel import kernel_output

    text, changed, launch = kernel_output(built, best_source)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    try:
        sig = [(p.name, p.ctype) for p in find_signature(text, built.kernel)]
    except CSignatureError:
        sig = []
    same = len(sig) == len(built.signature) and all(
        a[0] == b[0] and same_type(a[1].replace("const", ""), b[1].replace("const", ""))
        for a, b in zip(sig, built.signature, strict=False))
    if not same:
        console.print(f"warning: the best kernel's {built.kernel} signature differs from the input's",
                      markup=False, highlight=False)
    if changed:
        console.print(f"LAUNCH CHANGED: {launch}  (the new launch is a comment at the end of {path.name})",
                      markup=False, highlight=False)
    else:
        console.print(f"launch unchanged: {launch}", markup=False, highlight=False)
    return path


def optimize_cmd(
    ctx: typer.Context,
    target: Annotated[str | None, typer.Argument(
        help="KERNEL.cu (with --task unless it lives in a task folder) or a task id/folder; "
             "omit for the demo.")] = None,
    task: Annotated[str | None, typer.Option("--task", "-t", help="Task (bundled id or folder) that "
                                             "verifies the kernel: reference + input configurations.")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Also propose edits with this model "
                                              "(built-in operators always run). Default: setting llm.model "
                                              "(none for the demo).")] = None,
    backend: Annotated[str | None, typer.Option("--backend", "-b", help="cpu (estimated times) or gpu (measured). "
                                                "Default: setting cuda.backend, "
                                                f"{defaults.CUDA_BACKEND}.")] = None,
    budget: Annotated[int | None, typer.Option("--budget", "-n", min=1, help="Evaluations (distinct kernels, the "
                                               "start included). Default: setting optiml.budget, "
                                               f"{defaults.OPTIML_BUDGET} (the demo: {DEMO_BUDGET}); "
                                               "none with --time-limit alone.")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.001,
                                                     help="Stop dispatching after S seconds.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path("optiml-out"),
    algo: Annotated[str | None, typer.Option("--algo", help="mcts, random or greedy (hill climbing). Default: "
                                             f"setting optiml.algorithm, {defaults.OPTIML_ALGORITHM}.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Search seed (runs are deterministic). Default: "
                                             f"setting optiml.seed, {defaults.OPTIML_SEED}.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Resume (or name) a run in the run store.")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU the cost model estimates for. Default: setting "
                                            f"cuda.gpu, {defaults.CUDA_GPU}.")] = None,
    demo: Annotated[bool, typer.Option("--demo", help="Run the bundled demo (the default without TARGET).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No live progress display.")] = False,
    kernel: Annotated[str | None, typer.Option("--kernel", "-k", help="Your own kernel: the __global__ function "
                                               "in KERNEL.cu to optimise; the original is the reference "
                                               "(no task folder; docs/optiml.md 'Your own kernel').")] = None,
    grid: Annotated[str | None, typer.Option("--grid", help="With --kernel: the launch grid, C expressions of "
                                             "the scalar parameters ('(n + 255) / 256' or 'x, y').")] = None,
    block: Annotated[str | None, typer.Option("--block", help="With --kernel: the block ('256' or '16, 16').")] = None,
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="With --kernel: NAME=VALUE for every "
                                                    "scalar parameter (repeat).")] = None,
    size: Annotated[list[str] | None, typer.Option("--size", help="With --kernel: NAME=EXPR, the element count "
                                                   "of pointer NAME as an expression of the scalars.")] = None,
    init: Annotated[list[str] | None, typer.Option("--init", help="With --kernel: NAME=GENERATOR for an input "
                                                   "(default uniform(-1, 1) for floats, randint(0, 16) "
                                                   "for integers).")] = None,
    reference: Annotated[str | None, typer.Option("--reference", help="With --kernel: FILE.py:FUNCTION, a "
                                                  "NumPy or PyTorch (the module imports torch) reference "
                                                  "instead of the original kernel.")] = None,
    host: Annotated[str | None, typer.Option("--host", help="With a kernel file: a host program that launches "
                                             "the kernel; grid, block, sizes and scalar values are inferred "
                                             "from its launch where possible (options override).")] = None,
    emulation_budget: Annotated[float, typer.Option(
        "--emulation-budget", min=0.1, help="With --kernel on the CPU back-end: seconds one run of the original "
        "may take on the CPU runtime; above it correctness is checked at shrunk sizes and the given sizes are "
        "only timed (estimated).")] = 2.0,
) -> None:
    """Make a CUDA kernel faster by MCTS over verified edits (OptiML-X); writes best.cu, tree.json and
    report.html to --out."""
    from rich.console import Console

    from veriforge.cli.main import settings_of

    settings = settings_of(ctx)
    opt = settings.optiml
    backend = backend or settings.cuda.backend
    algo = algo or opt.algorithm
    seed = seed if seed is not None else opt.seed
    gpu = gpu or settings.cuda.gpu
    console = Console()
    if demo or (target is None and task is None):
        target, task = DEMO_TASK, None
        # The demo keeps its own small budget unless one is asked for (flag or explicit setting).
        budget = budget if budget is not None else opt.budget if "budget" in opt.model_fields_set else DEMO_BUDGET
        console.print(f"[bold]OptiML-X demo[/]: the naive kernel of {DEMO_TASK}, built-in edit operators, "
                      "CPU back-end (estimated times; no GPU, no model, no network)")
    else:
        model = model or settings.llm.model
    if budget is None and time_limit is None:
        budget = opt.budget
    user = None
    own_launch = False
    if target is not None and str(target).endswith((".cu", ".cuh")) and task is None and Path(target).is_file():
        from veriforge.core.sourcefile import read_source
        from veriforge.optiml.xsearch import _task_folder_near

        try:
            text = read_source(target)
        except VeriforgeError as exc:
            _fail(str(exc))
        own_launch = "<<<" in text and _task_folder_near(Path(target).resolve()) is None
    if own_launch or host is not None or kernel is not None or any(x for x in (grid, block, param, size, init,
                                                                               reference)):
        if task is not None:
            _fail("--kernel/--host/--grid/--block/--param/--size/--reference build a task from your kernel; do not "
                  "also give --task")
        if target is None or not str(target).endswith((".cu", ".cuh")):
            _fail("--kernel needs a kernel file: veriforge optimize KERNEL.cu --kernel NAME --grid EXPR "
                  "--block EXPR --param NAME=VALUE")
        user = {"kernel": kernel, "grid": grid, "block": block, "param": param, "size": size, "init": init,
                "reference": reference, "host": host, "emulation_budget": emulation_budget}
    _say_family(console, task if task is not None else target)
    from veriforge.cli.progress import interrupted, new_run_id, run_interruptible

    run_id = run_id or new_run_id()  # known before the search starts, so Ctrl-C can name it
    hint = interrupted(run_id, kept="evaluations so far are in the run store")
    run_interruptible(lambda: hint, lambda: _run(console, target, task, model, backend, budget, time_limit, out,
                                                 algo, seed, run_id, gpu, quiet, user), _fail)


def _say_family(console: Any, ref: str | None) -> None:
    """One line when a bare task id is bundled in several families: OptiML-X optimises ``.cu``
    kernels, so it takes the C→CUDA task (resolve_inputs does the same)."""
    if ref is None:
        return
    from veriforge.cuda.tasks.load import bundled_families

    families = bundled_families(ref)
    if len(families) > 1 and "c2cuda" in families:
        others = ", ".join(f"{f}/{ref}" for f in families if f != "c2cuda")
        console.print(f"task {ref}: using c2cuda/{ref}, the .cu kernel task ({others} is not a .cu task)",
                      markup=False, highlight=False)


def _run(console: Any, target: str | None, task: str | None, model: str | None, backend: str,
         budget: int | None, time_limit: float | None, out: Path, algo: str, seed: int,
         run_id: str | None, gpu: str, quiet: bool, user: dict[str, Any] | None = None) -> None:
    from veriforge.cli.preflight import check_model, check_out_file, prepare_out
    from veriforge.optiml.xsearch import XSearchSettings

    settings = XSearchSettings(algorithm=algo, max_evaluations=budget, max_seconds=time_limit, seed=seed,
                               backend=backend, gpu=gpu)
    # Everything that would waste the search is checked first, in seconds: the output location
    # (writable, not a file, no other run writing there) and the model (answers one request).
    option = "--out"
    if user is not None and str(out).endswith(".cu"):
        check_out_file(out)
        lock_dir, option = out.parent / f"{out.stem}.optiml", f"--out {out}: its run folder"
    else:
        lock_dir = out
    with prepare_out(lock_dir, command="veriforge optimize", run_id=run_id, option=option):
        if model:
            console.print(f"model {model}: {check_model(model)}", markup=False, highlight=False)
        _search(console, target, task, model, budget, out, settings, run_id, quiet, user)


def _search(console: Any, target: str | None, task: str | None, model: str | None, budget: int | None,
            out: Path, settings: Any, run_id: str | None, quiet: bool, user: dict[str, Any] | None) -> None:
    """The search and its summary, once the output folder is locked and the model answered."""
    import threading

    from rich.table import Table

    from veriforge.cli.progress import StepProgress
    from veriforge.core.store import RunStore
    from veriforge.optiml.report import write_outputs
    from veriforge.optiml.xsearch import optimize, resolve_inputs

    backend = settings.backend
    built = None
    out_kernel: Path | None = None
    if user is not None:
        from veriforge.optiml.user_kernel import build_user_task, parse_assignments

        assert target is not None
        built = build_user_task(target, user["kernel"], user["grid"], user["block"],
                                parse_assignments(user["param"], "--param"), parse_assignments(user["size"], "--size"),
                                inits=parse_assignments(user["init"], "--init"), reference=user["reference"],
                                backend=backend, host=user["host"],
                                emulation_budget_s=user["emulation_budget"])
        spec, label = built.spec, built.label
        _print_user_task(console, built)
        if str(out).endswith(".cu"):
            out_kernel, out = out, out.parent / f"{out.stem}.optiml"
        else:
            out_kernel = out / Path(target).name
    else:
        spec, _, label = resolve_inputs(target, task)
    proposers = None
    if model:
        from veriforge.llm.factory import create_client
        from veriforge.optiml.model_proposer import proposers_with_model

        proposers = proposers_with_model(create_client(model), spec)
    store = RunStore()
    # a resumed run continues its count: the evaluations stored before the interruption are done
    done_before = len(store.records("search.node", run_id=run_id)) if run_id else 0
    console.print(f"run {run_id} (store {store.path})" + (f"; resuming after {done_before} stored evaluation(s)"
                                                          if done_before else ""), markup=False, highlight=False)
    with StepProgress(f"optimising {label}", budget, console=console, quiet=quiet, prefix="optimize") as bar:

        def started(cand: Any) -> None:
            meta = getattr(cand, "metadata", None) or {}
            edit = meta.get("description") or meta.get("edit") or meta.get("operator") or "start"
            bar.started(threading.get_ident(), f"candidate {cand.hash[:10]} ({str(edit)[:60]})")

        def progress(p: dict[str, Any]) -> None:
            best = "best –" if p["best"] is None else f"best {p['best']:.4g}"
            note = best + (f" · bottleneck: {p['bottleneck']}" if p["bottleneck"] else "")
            bar.step(done_before + p["calls"], note, key=threading.get_ident())

        result = optimize(target, task=task, settings=settings, proposers=proposers, store=store,
                          run_id=run_id, progress=progress, started=started,
                          resolved=(built.spec, built.start, built.label) if built is not None else None)
    paths = write_outputs(result, out)
    start, best = result.start.evaluation.details, result.best.evaluation.details
    table = Table(title=f"OptiML-X · {result.spec.id} · {result.search.algorithm}")
    table.add_column("")
    table.add_column("start")
    table.add_column("best")
    prov = settings.provenance
    where = f"for {settings.gpu}" if prov == "estimated" else ("CPU, not GPU" if prov == "emulated" else "")
    table.add_row(f"time ({prov}{' ' + where if where else ''}, geomean)", _fmt_time(result.start_time),
                  _fmt_time(result.best_time))
    table.add_row("speedup", "1.00×", f"[bold green]{result.speedup:.2f}×[/]")
    table.add_row("objective", f"{result.start.evaluation.objective:.4g}", f"{result.best.evaluation.objective:.4g}")
    table.add_row("provenance", prov, prov)
    table.add_row("verified configs", ", ".join(start.get("verified_configs") or []),
                  ", ".join(best.get("verified_configs") or []))
    table.add_row("bottleneck", str(start.get("bottleneck", "")), str(best.get("bottleneck", "")))
    if prov == "estimated":
        table.add_row("estimate status", _status(start.get("estimate")), _status(best.get("estimate")))
    console.print(table)
    from veriforge.optiml.report import sizes_line

    console.print(f"problem sizes: {sizes_line(result.spec)}", markup=False, highlight=False)
    for line in estimate_lines(best.get("estimate")):
        console.print(f"  best: {line}", markup=False, highlight=False)
    from veriforge.optiml.report import heldout_line, skips_line

    console.print(f"held-out sizes: {heldout_line(result.heldout)}", markup=False, highlight=False)
    model_line = skips_line(result.proposer_skips, result.proposer_calls)
    if model_line:
        console.print(f"model proposals: {model_line} (reasons in tree.json, proposer_skips)",
                      markup=False, highlight=False)
    calls = result.model_calls()
    if calls["failed"]:
        from veriforge.optiml.report import model_calls_line

        console.print(f"model calls: {model_calls_line(calls)}", markup=False, highlight=False)
    st = result.search.stats
    console.print(f"{st.unique_evaluations} kernels evaluated ({st.accepted} accepted, {st.rejected} rejected), "
                  f"run {result.search.run_id}")
    tree = result.tree_json()
    if tree.get("emulation_limited"):
        from veriforge.optiml.report import emulation_line

        console.print(f"ran out of CPU emulation time: {emulation_line(tree['nodes'])}", markup=False,
                      highlight=False)
    unscored = tree.get("unscored") or []
    if unscored:
        console.print(f"{len(unscored)} verified kernel(s) without a score (ranked after every scored one):",
                      markup=False, highlight=False)
        for u in unscored[:5]:
            console.print(f"  #{u['id']}: {u['reason']}"[:400], markup=False, highlight=False)
    if built is not None and out_kernel is not None:
        paths["best.cu"] = paths["kernel"]  # with the generated solve() the task verified
        paths["kernel"] = _write_user_kernel(console, built, result.best.state.source, out_kernel)
    for what, path in paths.items():
        console.print(f"{what:>7}: {path}")
    if calls["all_failed"]:
        # The outputs are written, but the run the user asked for (with a model) did not happen.
        typer.echo(f"error: every model call failed ({calls['failed']} of {calls['calls']}; first: "
                   f"{calls['first_error']}); the result above comes from the built-in operators only "
                   f"(run {result.search.run_id})", err=True)
        raise typer.Exit(1)
