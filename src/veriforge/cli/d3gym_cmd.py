"""``veriforge d3gym``: build verifiable data-driven-discovery tasks from research repositories.

``build`` runs the construction pipeline (docs/d3gym.md) and prints its per-stage report;
``validate`` re-checks every task's evaluator (gold passes, negative controls fail). ``run`` and
``export`` hand over to :mod:`veriforge.discovery.env` / :mod:`veriforge.discovery.export` when those
are installed. Heavy imports happen inside the commands so ``veriforge --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from veriforge.errors import VeriforgeError

app = typer.Typer(help="D3-Gym: verifiable environments for data-driven discovery.", no_args_is_help=True)


def _fail(text: str, code: int = 2) -> None:
    typer.echo(f"error: {text}", err=True)
    raise typer.Exit(code)


def _model(model: str | None) -> str | None:
    """``--model``, else the ``llm.model`` setting of this invocation (``--set``/config/env)."""
    from veriforge.core.config import active_settings

    return model or active_settings().llm.model


def _client(model: str | None, store: Any) -> Any:
    model = _model(model)
    if not model:
        return None
    from veriforge.llm import create_client

    return create_client(model, store=store)


def print_build_report(report: Any) -> None:
    """The per-stage report: candidates and skips, then one row per task."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    s = report.summary()
    console.print(f"[bold]{report.repo}[/bold] -> {report.out}  (run {report.run_id})")
    console.print(f"mined {s['candidates_mined']} candidate(s); skipped {s['files_skipped']} file(s):")
    for skip in report.skipped:
        console.print(f"  - {skip['path']}: {skip['reason']}", markup=False, highlight=False)
    table = Table("task", "status", *[st for st in ("standalone", "env", "gold", "evalcheck")], "s", "reason")
    for t in report.tasks:
        cells = [t.stages.get(st, {}).get("status", "-") for st in ("standalone", "env", "gold", "evalcheck")]
        why = f"{t.failed_stage} ({t.failure_kind}): {t.reason}" if t.failed_stage else ""
        table.add_row(t.instance_id, t.status, *cells, f"{t.seconds:.1f}", why[:160])
    console.print(table)
    console.print(
        f"environments: {s['environments']} ({s['environments_ok']} task(s) ok) | gold runs passing: "
        f"{s['gold_runs_passing']} | evaluators validated: {s['evaluators_validated']}, rejected: "
        f"{s['evaluators_rejected']} | built: {s['tasks_built']} (flagged unanswerable: "
        f"{s.get('flagged_unanswerable', 0)}) | infrastructure failures: "
        f"{s['infrastructure_failures']}, program failures: {s['program_failures']}, machine failures: "
        f"{s.get('machine_failures', 0)} | {s['seconds']:.1f} s"
    )
    reasons = s.get("failures", {}).get("by_reason", {})
    if reasons:
        console.print("failures by reason: " + ", ".join(f"{k} {v}" for k, v in reasons.items()))
    rep, era, disk = s.get("repairs", {}), s.get("era", {}), s.get("disk", {})
    if rep.get("applied"):
        console.print(
            f"gold runs repaired: {rep['gold_runs_repaired']} | repairs applied: "
            + ", ".join(f"{k} {v}" for k, v in rep["applied"].items())
        )
    if era.get("tasks_with_era"):
        relaxed = ", ".join(f"{k} {v}" for k, v in era.get("relaxed", {}).items()) or "none"
        console.print(f"environments of the repository's era: {era['tasks_with_era']} task(s) | relaxed: {relaxed}")
    if disk.get("per_task_bytes"):
        console.print(
            f"environment disk: {disk['environments_bytes'] / 2**20:.1f} MiB in all, "
            f"{disk['mean_per_task_mb']:.1f} MiB per task (shared environments split between their tasks)"
        )


@app.command("build")
def build_cmd(
    repo: Annotated[str, typer.Argument(help="Repository: a local folder or a git URL (cloned --depth 1).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the task folders into.")],
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Model for the filter, rewrite, instructions and evaluators "
                     "(default: setting llm.model; none: rule-based stages only)."),
    ] = None,
    offline: Annotated[bool, typer.Option("--offline", help="Install only from --wheel-dir.")] = False,
    wheel_dir: Annotated[Path | None, typer.Option("--wheel-dir", help="Local wheel directory.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Tasks built concurrently.")] = 1,
    env_mode: Annotated[
        str,
        typer.Option(
            "--env-mode",
            help="install: a fresh venv per requirement set; "
            "reuse: this interpreter's packages, no installs.",
        ),
    ] = "install",
    timeout: Annotated[float, typer.Option("--timeout", help="Gold-run timeout in seconds.")] = 600.0,
    domain: Annotated[str, typer.Option("--domain", help="Scientific domain recorded in task.json.")] = "",
    era: Annotated[
        str,
        typer.Option(
            "--era",
            help="Package era of install-mode environments: auto (last git commit of each script), "
            "off (today's packages) or an ISO date.",
        ),
    ] = "auto",
    repair: Annotated[
        bool, typer.Option("--repair/--no-repair", help="Repair gold programs failing on library drift.")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Mine REPO, build and validate its tasks into OUT, and print the per-stage report."""
    try:
        from veriforge.core.store import RunStore
        from veriforge.discovery.build import BuildConfig, build_tasks

        cfg = BuildConfig(
            env_mode=env_mode,
            offline=offline,
            wheel_dir=str(wheel_dir) if wheel_dir else None,
            timeout_s=timeout,
            jobs=jobs,
            domain=domain,
            era=era,
            repair=repair,
        )
        from veriforge.cli.preflight import check_model, prepare_out

        with prepare_out(out, command="veriforge d3gym build"), RunStore() as store:
            check_model(model)  # before mining: every stage that asks the model would fail quietly
            client = _client(model, store)
            progress = None if as_json else (lambda m: typer.echo(m, err=True))
            report = build_tasks(repo, out, cfg, client=client, store=store, progress=progress)
    except VeriforgeError as exc:
        _fail(str(exc))
        return
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print_build_report(report)
    if not report.built:
        raise typer.Exit(1)


@app.command("validate")
def validate_cmd(
    tasks: Annotated[Path, typer.Argument(help="Folder of task folders (the --out of build).")],
    reruns: Annotated[int, typer.Option("--reruns", min=1, help="Runs per case (verdict stability).")] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="Print results as JSON.")] = False,
) -> None:
    """Re-run every task's evaluator checks: the gold output passes, every negative control fails."""
    try:
        from veriforge.discovery.validate import validate_tasks

        results = validate_tasks(tasks, reruns=reruns)
    except VeriforgeError as exc:
        _fail(str(exc))
        return
    if not results:
        _fail(f"no task folders (with task.json) under {tasks}")
    if as_json:
        typer.echo(json.dumps(results, indent=2))
    else:
        for r in results:
            mark = "ok  " if r["ok"] else "FAIL"
            ans = r.get("answerability") or {}
            cov = ans.get("coverage") or {}
            note = (
                f" | answerable: {ans.get('answerable')} ({ans.get('method')}; instruction states "
                f"{cov.get('covered')}/{cov.get('operations')} operations)"
                if cov
                else ""
            )
            typer.echo(
                f"{mark} {r['instance_id']}: {len(r['controls'])} case(s)"
                + note
                + ("" if r["ok"] else " -- " + "; ".join(r["reasons"]))
            )
    if not all(r["ok"] for r in results):
        raise typer.Exit(1)


def _missing(what: str, exc: Exception) -> None:
    _fail(f"`d3gym {what}` is not available in this installation ({type(exc).__name__}: {exc})")


@app.command("run")
def run_cmd(
    tasks: Annotated[Path, typer.Argument(help="Folder of task folders.")],
    agent: Annotated[str, typer.Option("--agent", help="Agent to run.")] = "baseline",
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model for the agent (default: setting "
                                              "llm.model).")] = None,
    n: Annotated[int, typer.Option("--n", min=1, help="Trajectories per task.")] = 1,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Where trajectories are written.")] = None,
) -> None:
    """Run an agent on the tasks (provided by veriforge.discovery.env)."""
    try:
        from veriforge.discovery import env as env_mod

        runner = env_mod.run_cli
    except (ImportError, AttributeError) as exc:
        _missing("run", exc)
        return
    try:
        from veriforge.cli.preflight import check_model, prepare_out

        model = _model(model)
        target = out if out is not None else tasks.expanduser().resolve().with_name(
            f"{tasks.expanduser().resolve().name}-trajectories")  # run_cli's default
        with prepare_out(target, command="veriforge d3gym run"):
            check_model(model)
            code = runner(tasks=tasks, agent=agent, model=model, n=n, out=out)
    except VeriforgeError as exc:
        _fail(str(exc))
        return
    raise typer.Exit(int(code or 0))


@app.command("export")
def export_cmd(
    traj: Annotated[Path, typer.Argument(help="Folder of sampled trajectories.")],
    fmt: Annotated[
        str, typer.Option("--format", help="Export format: sft | preference (DPO pairs) | rl (per-step rewards).")
    ] = "sft",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output file.")] = None,
    turns: Annotated[
        str,
        typer.Option(
            "--turns",
            help="sft only: all | final | mask-failed (failed turns weight 0) | drop-failed "
            "(turns whose program did not run removed with their feedback).",
        ),
    ] = "all",
) -> None:
    """Export trajectories for training (provided by veriforge.discovery.export)."""
    try:
        from veriforge.discovery import export as export_mod

        exporter = export_mod.export_cli
    except (ImportError, AttributeError) as exc:
        _missing("export", exc)
        return
    try:
        if out is not None:
            from veriforge.cli.preflight import prepare_out

            with prepare_out(out, command="veriforge d3gym export", is_file=True):
                code = exporter(traj=traj, fmt=fmt, out=out, turns=turns)
        else:
            code = exporter(traj=traj, fmt=fmt, out=out, turns=turns)
    except VeriforgeError as exc:
        _fail(str(exc))
        return
    raise typer.Exit(int(code or 0))
