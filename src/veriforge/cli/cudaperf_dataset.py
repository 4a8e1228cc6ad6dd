"""``veriforge cudaperf dataset``: build, export, list families, KernelBench import/export.

See docs/cudaperf-dataset.md. Bad arguments exit 2 with one ``error:`` line (an unknown family
lists the known ones); a build that was interrupted exits 130 and resumes on the next run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

dataset_app = typer.Typer(help="CudaPerf's generated dataset: build (verified, resumable), export, KernelBench.",
                          no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Attach ``dataset`` to ``veriforge cudaperf``."""
    app.add_typer(dataset_app, name="dataset")


def _fail(text: str, code: int = 2) -> None:
    typer.echo(f"error: {text}", err=True)
    raise typer.Exit(code)


def _split_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    return names or None


@dataset_app.command("build")
def build_cmd(
    out: Annotated[Path, typer.Option("--out", help="dataset folder (tasks/, data/, verl/, build.sqlite)")],
    families: Annotated[str | None, typer.Option("--families", help="comma-separated family names")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="c2cuda or torch2cuda")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="tasks per family (before dedup)")] = None,
    max_tasks: Annotated[int | None, typer.Option("--max-tasks", help="unique tasks in total (recorded included)")]
    = None,
    jobs: Annotated[int, typer.Option("--jobs", help="tasks verified in parallel")] = 2,
    executor: Annotated[str, typer.Option("--executor", help="local (threads over isolated evaluations) or ray")]
    = "local",
    ray_address: Annotated[str, typer.Option("--ray-address", help="'local' (private cluster) or 'auto'/host:port")]
    = "local",
    seed: Annotated[int, typer.Option("--seed", help="generation and split seed")] = 0,
    no_estimate: Annotated[bool, typer.Option("--no-estimate", help="skip the cost model's estimated times")]
    = False,
    resume: Annotated[bool, typer.Option("--resume/--fresh", help="skip tasks recorded by an earlier run")] = True,
    dedup: Annotated[str, typer.Option("--dedup", help="near | structural | exact")] = "near",
    split_by: Annotated[str, typer.Option("--split-by", help="group (variant group) or family")] = "group",
    no_progress: Annotated[bool, typer.Option("--no-progress", help="no progress bar")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
) -> None:
    """Generate tasks from the families, dedup, verify every implementation, record, export."""
    from veriforge.cudaperf.dataset.build import BuildError, BuildOptions, build

    opts = BuildOptions(out=out, families=_split_list(families), kind=kind, limit=limit, max_tasks=max_tasks,
                        jobs=jobs, executor=executor, seed=seed, estimate=not no_estimate, resume=resume,
                        dedup=dedup, split_by=split_by, progress=not no_progress and not as_json,
                        ray_address=ray_address)
    from veriforge.cli.preflight import OutputLocationError, prepare_out

    try:
        with prepare_out(out, command="veriforge cudaperf dataset build"):
            summary = build(opts)
    except (BuildError, OutputLocationError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        typer.echo(f"interrupted: finished tasks are recorded in {out / 'build.sqlite'}; run the same command "
                   "again to resume", err=True)
        raise typer.Exit(130) from None
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    cols = ("generated", "duplicates", "bundled", "malformed", "dropped", "kept", "resumed", "verified",
            "impls_verified")
    table = Table(title=f"cudaperf dataset build → {out}")
    table.add_column("family")
    for c in cols:
        table.add_column(c.replace("_", " "), justify="right")
    for name, c in summary.families.items():
        table.add_row(name, *(str(getattr(c, k)) for k in cols))
    tot = summary.total()
    table.add_row("[bold]total", *(f"[bold]{getattr(tot, k)}" for k in cols))
    console = Console()
    console.print(table)
    console.print(f"wall {summary.wall_s:.1f} s · {summary.tasks_per_minute:.1f} tasks/min · "
                  f"{summary.impls_per_minute:.1f} implementations/min (this run, this machine)")


@dataset_app.command("export")
def export_cmd(
    out: Annotated[Path, typer.Argument(help="a built dataset folder")],
    seed: Annotated[int | None, typer.Option("--seed", help="split seed (default: the build's)")] = None,
    split_by: Annotated[str | None, typer.Option("--split-by", help="group or family (default: the build's)")]
    = None,
    ground_truth_root: Annotated[str | None, typer.Option(
        "--ground-truth-root", help="prefix of verl's ground_truth task paths (default: the folder's absolute "
        "path; '.' for relative)")] = None,
) -> None:
    """(Re)write data/, verl/, DATASHEET.md, stats.json and README.md from the build's run store."""
    from veriforge.cudaperf.dataset.export import ExportError, export
    from veriforge.cudaperf.dataset.split import SplitError

    try:
        stats = export(out, seed=seed, split_by=split_by, ground_truth_root=ground_truth_root)
    except (ExportError, SplitError) as exc:
        _fail(str(exc))
    per_split = ", ".join(f"{k} {v}" for k, v in stats["per_split"].items())
    typer.echo(f"exported {stats['kept']} tasks to {out}/data ({per_split}), verl/, DATASHEET.md, README.md")


@dataset_app.command("families")
def families_cmd(
    kind: Annotated[str | None, typer.Option("--kind", help="c2cuda or torch2cuda")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    count: Annotated[bool, typer.Option("--count", help="enumerate each family and count its tasks")] = False,
) -> None:
    """List the registered task families (optionally with their task counts)."""
    from veriforge.cudaperf.dataset.family import families

    for fam in families(kind):
        n = f"\t{sum(1 for _ in fam.generate(seed))}" if count else ""
        typer.echo(f"{fam.name}\t{fam.kind}\t{fam.category}{n}")


@dataset_app.command("kernelbench-import")
def kb_import_cmd(
    src: Annotated[Path, typer.Argument(help="KernelBench root (level1/, level2/...), a level folder or a file")],
    out: Annotated[Path, typer.Option("--out", help="folder to write torch2cuda/<id>/ task folders into")],
    category: Annotated[str, typer.Option("--category")] = "other",
) -> None:
    """Import KernelBench problem files as torch2cuda task folders (plus solutions/ if present)."""
    from veriforge.cli.preflight import OutputLocationError, prepare_out
    from veriforge.cuda.tasks.schema import TaskFormatError
    from veriforge.cudaperf.dataset.kernelbench import KernelBenchError, import_kernelbench_tree

    try:
        with prepare_out(out, command="veriforge cudaperf dataset kernelbench-import"):
            folders = import_kernelbench_tree(src, out, category=category)
    except (KernelBenchError, TaskFormatError, OutputLocationError) as exc:
        _fail(str(exc))
    with_impls = sum(1 for f in folders if (f / "impls").is_dir())
    typer.echo(f"imported {len(folders)} task(s) into {out}/torch2cuda ({with_impls} with implementations)")


@dataset_app.command("kernelbench-export")
def kb_export_cmd(
    src: Annotated[Path, typer.Argument(help="a dataset folder, a folder of task folders, or one task")],
    out: Annotated[Path, typer.Option("--out", help="KernelBench-style folder to write")],
    config: Annotated[str | None, typer.Option("--config", help="configuration whose sizes are substituted "
                                                                 "(default: each task's last)")] = None,
    no_solutions: Annotated[bool, typer.Option("--no-solutions", help="problems only")] = False,
) -> None:
    """Write torch2cuda tasks as KernelBench problem files and ModelNew solution files."""
    from veriforge.cli.preflight import OutputLocationError, prepare_out
    from veriforge.cuda.tasks.schema import TaskFormatError
    from veriforge.cudaperf.dataset.kernelbench import KernelBenchError, export_kernelbench

    try:
        with prepare_out(out, command="veriforge cudaperf dataset kernelbench-export"):
            rows = export_kernelbench(src, out, config=config, solutions=not no_solutions)
    except (KernelBenchError, TaskFormatError, OutputLocationError) as exc:
        _fail(str(exc))
    typer.echo(f"exported {len(rows)} problem(s) and {sum(len(r['solutions']) for r in rows)} solution(s) to {out}")
