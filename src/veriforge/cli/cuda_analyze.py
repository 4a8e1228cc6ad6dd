"""``veriforge cuda analyze FILE.cu --kernel K --grid … --block … --param n=…``: static structure report.

Prints a readable report (coalescing per global access, bank conflicts, divergent branches,
barriers, loops, FLOPs/bytes/intensity, resources and occupancy, and every unknown with its
reason), then the cost model's estimate of the launch on ``--gpu`` (default H100-SXM; ``--no-estimate``
skips it): the time, or "unknown — lower bound X" with what could not be counted, the status
(exact / upper_bound / unknown), the bound and any part priced at its worst case. ``--json`` prints
the report as JSON, with the estimate under ``"estimate"``. The lead mounts :func:`analyze_cmd` on the
``cuda`` group; rich and the analysis package are imported inside the command so ``--help``
stays fast.

Exit codes: 0 report printed; 2 bad arguments, unreadable file, unknown kernel or invalid launch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from veriforge.core import defaults

EXIT_SETUP = 2
DEFAULT_GPU = defaults.CUDA_GPU


def _dims(text: str, what: str) -> tuple[int, ...]:
    """``256`` / ``32,8`` / ``32x8`` / ``(32, 8, 1)`` → a tuple of ints."""
    cleaned = text.strip().strip("()[]").replace("x", ",").replace("X", ",")
    try:
        dims = tuple(int(p) for p in cleaned.split(",") if p.strip())
    except ValueError as exc:
        raise typer.BadParameter(f"expected N or X,Y[,Z], got {text!r}", param_hint=what) from exc
    if not 1 <= len(dims) <= 3:
        raise typer.BadParameter(f"expected 1 to 3 dimensions, got {text!r}", param_hint=what)
    return dims


def _number(text: str) -> int | float:
    t = text.strip()
    m = t.replace(" ", "")
    if "<<" in m:
        a, b = m.split("<<", 1)
        return int(a, 0) << int(b, 0)
    if "**" in m:
        a, b = m.split("**", 1)
        return int(a, 0) ** int(b, 0)
    try:
        return int(m, 0)
    except ValueError:
        return float(m)


def _pairs(items: list[str], what: str, numeric: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not name.strip() or (numeric and not sep):
            raise typer.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint=what)
        if not sep:
            out[name.strip()] = None
            continue
        try:
            out[name.strip()] = _number(value)
        except ValueError as exc:
            if numeric and what == "--param":
                raise typer.BadParameter(f"{name.strip()}: {value!r} is not a number", param_hint=what) from exc
            out[name.strip()] = value.strip()
    return out


def _fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "unknown"
    if not isinstance(x, float):
        return str(x)
    if abs(x) >= 1e6:
        return f"{x:.3g}"
    text = f"{x:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text  # 32000 stays 32000, 2.50 becomes 2.5


def analyze_cmd(
    file: Annotated[Path, typer.Argument(help="CUDA source file (.cu)", exists=True, dir_okay=False)],
    kernel: Annotated[str, typer.Option("--kernel", "-k", help="__global__ function to analyse")],
    grid: Annotated[str, typer.Option("--grid", help="grid size: N or X,Y[,Z]")],
    block: Annotated[str, typer.Option("--block", help="block size: N or X,Y[,Z]")],
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="scalar parameter NAME=VALUE")] = None,
    define: Annotated[list[str] | None, typer.Option("--define", "-D", help="macro NAME[=VALUE]")] = None,
    include: Annotated[list[Path] | None, typer.Option(
        "-I", help="include directory for the ptxas compile, repeatable (the file's folder is added)")] = None,
    template: Annotated[list[str] | None, typer.Option("--template", "-t", help="template arg NAME=VALUE")] = None,
    arch: Annotated[str | None, typer.Option(
        "--arch", help="target architecture (default: the --gpu's, sm_90 without an estimate)")] = None,
    smem: Annotated[int, typer.Option("--smem", help="dynamic shared memory bytes per block")] = 0,
    no_nvcc: Annotated[bool, typer.Option("--no-nvcc", help="skip ptxas (resources/occupancy unknown)")] = False,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU the cost model estimates the launch's time for. "
                                            f"Default: setting cuda.gpu, {DEFAULT_GPU}.")] = None,
    no_estimate: Annotated[bool, typer.Option("--no-estimate", help="skip the cost-model estimate")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Static structure analysis of one kernel for one launch (no GPU needed), and the cost model's
    estimated time of that launch on --gpu."""
    from veriforge.core.config import active_settings
    from veriforge.cuda import analysis
    from veriforge.errors import VeriforgeError

    settings = active_settings()
    gpu = gpu or settings.cuda.gpu
    if arch is None:
        arch = settings.cuda.arch
        if not no_estimate:
            from veriforge.cuda.arch import get_gpu

            try:
                arch = get_gpu(gpu).arch
            except VeriforgeError as exc:
                typer.echo(f"error: --gpu: {exc}", err=True)
                raise typer.Exit(EXIT_SETUP) from exc

    try:
        source = file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        typer.echo(f"error: cannot read {file}: {exc}", err=True)
        raise typer.Exit(EXIT_SETUP) from exc
    params = _pairs(param or [], "--param", True)
    defines = _pairs(define or [], "--define", False)
    targs = _pairs(template or [], "--template", True)
    try:
        rep = analysis.analyze(
            source,
            kernel=kernel,
            grid=_dims(grid, "--grid"),
            block=_dims(block, "--block"),
            params=params,
            arch=arch,
            defines=defines or None,
            dynamic_smem=smem,
            use_nvcc=not no_nvcc,
            template_args=targs,
            filename=str(file),
            include_dirs=[file.parent.resolve(), *(include or [])],
        )
    except VeriforgeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_SETUP) from exc
    estimate = None if no_estimate else estimate_launch(rep, gpu)
    if as_json:
        data = rep.to_dict()
        if estimate is not None:
            data["estimate"] = estimate
        typer.echo(json.dumps(data, indent=2))
        return
    _print_report(rep, file)
    if estimate is not None:
        _print_estimate(estimate)


def estimate_launch(rep: Any, gpu: str) -> dict[str, Any]:
    """The cost model's estimate of the analysed launch (``Estimate.to_dict()`` with ``status``,
    ``complete``, ``lower_bound_s``, ``unknown`` and ``worst_case``), or ``{"gpu", "error"}`` when
    the model has nothing to price (the reason)."""
    from veriforge.cuda import costmodel
    from veriforge.errors import VeriforgeError

    try:
        est = costmodel.estimate(rep, gpu)
    except (VeriforgeError, ValueError) as exc:
        return {"gpu": gpu, "status": "unknown", "time_s": None, "error": str(exc)}
    out = est.to_dict()
    out["provenance"] = "estimated"
    out["model"] = costmodel.MODEL_VERSION
    return out


def _us(t: float) -> str:
    return f"{t * 1e6:.2f} µs" if t < 1e-3 else f"{t * 1e3:.3f} ms"


def _print_estimate(est: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False, width=max(Console().width, 120))
    head = f"[bold]estimate[/] ({escape(str(est.get('model', 'cost model')))}, {escape(str(est.get('gpu')))}): "
    if est.get("error"):
        console.print(head + f"unknown — {escape(str(est['error']))}", soft_wrap=True)
        return
    if est.get("time_s") is not None:
        console.print(head + f"{_us(est['time_s'])}  status {est.get('status')}  bound {est.get('bound')}",
                      soft_wrap=True)
    else:
        lb = est.get("lower_bound_s")
        bound = f" — lower bound {_us(lb)}" if isinstance(lb, int | float) else ""
        console.print(head + f"unknown{bound}  status {est.get('status')}  bound {est.get('bound')} (counted work)",
                      soft_wrap=True)
    for u in est.get("unknown") or []:
        console.print(f"  unknown: {escape(str(u))}", soft_wrap=True)
    for w in est.get("worst_case") or []:
        console.print(f"  worst case: {escape(str(w))}", soft_wrap=True)


def _print_report(rep: Any, file: Path) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, width=max(Console().width, 120))
    g, b = rep.grid, rep.block
    console.print(
        f"[bold]{rep.kernel}[/] in {file}  grid={g} block={b} arch={rep.arch}  ({rep.duration_s * 1000:.0f} ms)"
    )
    if rep.global_accesses:
        t = Table(title="Global memory accesses", title_justify="left")
        for col in ("line", "kind", "access", "B/lane", "sectors/req", "efficiency", "requests", "note"):
            t.add_column(
                col, justify="right" if col in ("line", "B/lane", "sectors/req", "efficiency", "requests") else "left"
            )
        for a in rep.global_accesses:
            eff = "unknown" if a.efficiency is None else f"{a.efficiency:.0%}"
            note = a.unknown or ("read-only" if a.read_only else "")
            t.add_row(
                str(a.line),
                a.kind,
                escape(a.text),
                str(a.elem_bytes or "?"),
                _fmt(a.sectors_per_request),
                eff,
                _fmt(a.requests, 0),
                escape(note),
            )
        console.print(t)
    if rep.shared_accesses:
        t = Table(title="Shared memory accesses", title_justify="left")
        for col in ("line", "kind", "access", "bank-conflict ways", "note"):
            t.add_column(col)
        for s in rep.shared_accesses:
            ways = "unknown" if s.bank_conflict_ways is None else str(s.bank_conflict_ways)
            t.add_row(str(s.line), s.kind, escape(s.text), ways, escape(s.unknown or ""))
        console.print(t)
    if rep.branches:
        t = Table(title="Branches", title_justify="left")
        for col in ("line", "kind", "condition", "divergent", "where"):
            t.add_column(col)
        for br in rep.branches:
            div = "unknown" if br.divergent is None else ("yes" if br.divergent else "no")
            where = br.unknown or (br.scope or "")
            if br.scope == "tail":
                where = "tail only (last block)"
            t.add_row(str(br.line), br.kind, escape(br.condition), div, escape(where))
        console.print(t)
    if rep.barriers:
        console.print(f"[bold]Barriers[/]: {len(rep.barriers)}")
        for bar in rep.barriers:
            flag = (
                f"  [red]under thread-dependent condition `{escape(bar.condition or '')}`[/]"
                if bar.under_thread_dependent_condition
                else ""
            )
            console.print(f"  line {bar.line}: {bar.name}{flag}")
    for lp in rep.loops:
        unroll = (
            ", #pragma unroll"
            if lp.unrolled is True
            else (f", #pragma unroll {lp.unrolled}" if lp.unrolled is not False else "")
        )
        trips = ("not reached by any sampled thread" if lp.trip_count is None and not lp.unknown
                 else f"trip count {_fmt(lp.trip_count, 0)}")
        console.print(
            f"  loop line {lp.line}: {trips}{unroll}"
            + (f" ({escape(lp.unknown)})" if lp.unknown else "")
        )
    console.print(
        f"[bold]FLOPs[/] {_fmt(rep.flops, 0)}  [bold]global bytes[/] {_fmt(rep.global_bytes, 0)}"
        f"  [bold]arithmetic intensity[/] {_fmt(rep.arithmetic_intensity)} FLOP/B"
    )
    if rep.resources:
        r = rep.resources
        console.print(
            f"[bold]ptxas[/] {r['registers']} registers, {r['smem_static']} B static smem, "
            f"spills {r['spill_stores']}+{r['spill_loads']} B"
        )
    if rep.occupancy:
        o = rep.occupancy
        console.print(
            f"[bold]occupancy[/] {o['occupancy']:.0%} ({o['active_warps_per_sm']}/{o['max_warps_per_sm']}"
            f" warps, limited by {', '.join(o['limiting'])})"
        )
    traits = rep.traits
    shown = {
        k: traits[k]
        for k in ("vectorized", "unrolled", "restrict", "read_only", "uses_dynamic_smem", "warp_primitives")
        if k in traits
    }
    shown["atomics"] = traits.get("atomics", {}).get("count", 0)
    console.print("[bold]traits[/] " + escape(", ".join(f"{k}={v}" for k, v in shown.items())))
    if rep.unknowns:
        console.print("[bold yellow]unknown[/]")
        for u in rep.unknowns:
            console.print(f"  - {escape(u)}")
