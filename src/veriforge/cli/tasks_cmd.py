"""``veriforge tasks``: list, show and validate CUDA task folders (docs/tasks.md).

``validate`` is what dataset authors run after writing a task: schema, signatures, references,
and every implementation checked on the CPU back-end. It prints one row per task and exits 1 if
anything failed (2 for bad arguments), so it can gate CI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(help="List, show and validate CUDA tasks (bundled or your own folders).", no_args_is_help=True)


def _fail(text: str, code: int = 2) -> None:
    typer.echo(f"error: {text}", err=True)
    raise typer.Exit(code)


@app.command("list")
def list_cmd(
    family: Annotated[str | None, typer.Option("--family", help="c2cuda or torch2cuda")] = None,
    category: Annotated[str | None, typer.Option("--category", help="e.g. reduction, matmul")] = None,
    root: Annotated[Path | None, typer.Option("--root", help="a folder of tasks instead of the bundled set")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """List tasks with their family, category, configurations and implementations."""
    from veriforge.cuda.tasks import TaskFormatError, bundled_tasks, iter_tasks, load_task

    paths = list(iter_tasks(root)) if root else bundled_tasks(family)
    rows, broken = [], []
    for path in paths:
        try:
            spec = load_task(path)
        except TaskFormatError as exc:
            broken.append(str(exc))
            continue
        if (family and spec.family != family) or (category and spec.category != category):
            continue
        rows.append({"id": spec.id, "family": spec.family, "category": spec.category, "title": spec.title,
                     "configs": len(spec.configs), "impls": len(spec.implementations), "path": str(path)})
    if as_json:
        typer.echo(json.dumps({"tasks": rows, "broken": broken}, indent=2))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    # Ids are what a user copies into the next command: never shortened. Not on a terminal (a
    # pipe, a CI log) or on one too narrow for a readable table: one tab-separated line per task.
    widest = max((len(r["id"]) for r in rows), default=2)
    console = Console()
    if not console.is_terminal or console.width < widest + 70:
        typer.echo(f"{len(rows)} task(s)\nid\tfamily\tcategory\tconfigs\timpls\ttitle")
        for r in rows:
            typer.echo(f"{r['id']}\t{r['family']}\t{r['category']}\t{r['configs']}\t{r['impls']}\t{r['title']}")
    else:
        table = Table(title=f"{len(rows)} task(s)")
        table.add_column("id", no_wrap=True, min_width=widest)
        for col in ("family", "category", "configs", "impls"):
            table.add_column(col, no_wrap=True)
        table.add_column("title", overflow="fold")
        for r in rows:
            table.add_row(r["id"], r["family"], r["category"], str(r["configs"]), str(r["impls"]),
                          escape(r["title"]))  # titles such as "y[b] = A[b] * x[b]" are not markup
        console.print(table)
    for b in broken:
        typer.echo(f"broken: {b}", err=True)


@app.command("show")
def show_cmd(
    task: Annotated[str, typer.Argument(help="task id, family/id, or a task folder")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show one task: contract, parameters, configurations, implementations."""
    from veriforge.cuda.tasks import TaskFormatError, find_task, load_task

    try:
        spec = load_task(find_task(task))
    except TaskFormatError as exc:
        _fail(str(exc))
        return
    data = spec.model_dump(mode="json")
    data["path"] = str(spec.folder)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    typer.echo(f"{spec.id}  [{spec.family} / {spec.category}]  {spec.title}")
    typer.echo(f"folder: {spec.folder}")
    typer.echo("")
    typer.echo(spec.description.strip())
    if spec.params:
        typer.echo(f'\nextern "C" void {spec.entry}(' + ", ".join(f"{p.type} {p.name}" for p in spec.params) + ")")
        for p in spec.params:
            extra = f"size={p.size}" if p.size is not None else f"value={p.value if p.value is not None else p.name}"
            typer.echo(f"  {p.name:<12} {p.role:<6} {p.type:<16} {extra}" + (f"  init={p.init}" if p.init else ""))
    typer.echo("\nconfigurations:")
    for c in spec.configs:
        typer.echo(f"  {c.name:<12} seed={c.seed} " + " ".join(f"{k}={v}" for k, v in c.variables.items()))
    typer.echo("\nimplementations:")
    for i in spec.implementations:
        q = f" quality={i.quality}" if i.quality is not None else ""
        typer.echo(f"  {i.name:<16} {i.strategy:<14}{q}  {i.file}  {i.description}")


@app.command("validate")
def validate_cmd(
    paths: Annotated[list[Path] | None,
                     typer.Argument(help="task folders or folders of tasks (default: bundled)")] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="parallel evaluations (default: CPUs)")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="skip evaluating the implementations")] = False,
) -> None:
    """Check tasks: schema, signatures, references, and every implementation on the CPU back-end."""
    from veriforge.cuda.tasks import bundled_tasks, iter_tasks
    folders: list[Path] = []
    for p in paths or []:
        if not p.exists():
            _fail(f"{p} does not exist")
        found = list(iter_tasks(p))
        if not found:
            _fail(f"{p} contains no task.toml")
        folders.extend(found)
    if not paths:
        folders = bundled_tasks()
    if not folders:
        _fail("no tasks to validate")
    reports = _validate_with_progress(folders, jobs, run_impls=not quick)
    failed = [r for r in reports if not r.ok]
    if as_json:
        typer.echo(json.dumps({"ok": not failed, "tasks": [r.to_dict() for r in reports]}, indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"{len(reports)} task(s), {len(failed)} failed")
        for col in ("task", "family", "impls correct", "seconds", "status"):
            table.add_column(col)
        for r in reports:
            good = sum(i.correct for i in r.impls)
            table.add_row(r.task_id or str(r.path), r.family, f"{good}/{len(r.impls)}", f"{r.seconds:.1f}",
                          "ok" if r.ok else "[red]FAIL[/red]")
        console = Console()
        console.print(table)
        for r in failed:
            console.print(f"[bold]{r.task_id or r.path}[/bold] ({r.path}):", highlight=False)
            for p in r.problems:
                console.print(f"  - {p}", highlight=False, markup=False)
            for i in r.impls:
                if not i.correct:
                    console.print(f"  - implementation {i.name}: {i.reason}", highlight=False, markup=False)
    if failed:
        raise typer.Exit(1)


def _validate_with_progress(folders: list[Path], jobs: int | None, *, run_impls: bool) -> list[Any]:
    """:func:`~veriforge.cuda.tasks.validate.validate_many` with a line per finished task on stderr
    (a live bar in a terminal) and a heartbeat naming the tasks still running: validating every
    bundled task takes minutes, and a silent command looks hung."""
    import concurrent.futures as cf

    from veriforge.cli.progress import StepProgress
    from veriforge.cuda.evaluate.executor import ThreadExecutor
    from veriforge.cuda.tasks.validate import submit_validation, warm_up

    with StepProgress(f"validating {len(folders)} task(s)", len(folders), prefix="tasks validate") as bar:
        if run_impls:
            bar.note("tasks validate: preparing the CPU runtime and references (the first run compiles them)")
            bar.started("warm-up", "the CPU runtime build")
            warm_up(folders)
            bar.finished("warm-up")
        with ThreadExecutor(jobs) as pool:
            futures = submit_validation(folders, pool, run_impls=run_impls, warm=False)
            names = {f: folder.name for f, folder in zip(futures, folders, strict=True)}
            for f in futures:
                bar.started(f, names[f])
            for f in cf.as_completed(futures):
                report = f.result()
                good = sum(i.correct for i in report.impls)
                status = "ok" if report.ok else "FAIL"
                bar.step(note=f"{report.task_id or names[f]} {status} ({good}/{len(report.impls)} impls, "
                              f"{report.seconds:.1f} s)", key=f)
            return [f.result() for f in futures]
