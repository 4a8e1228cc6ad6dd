"""``veriforge cudaperf refine``: inference-time multi-turn refinement with any model (docs/cudaperf-refine.md).

Kept in its own module with ``register(app)`` so ``veriforge cudaperf`` imports nothing heavy until
the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from veriforge.errors import VeriforgeError

__all__ = ["refine_cmd", "register", "resolve_target"]


def _fail(text: str, code: int = 2) -> None:
    typer.echo(f"error: {text}", err=True)
    raise typer.Exit(code)


def resolve_target(target: str, out: Path) -> Any:
    """A TaskSpec from a bundled task id, a task folder, or a KernelBench-format ``.py`` problem
    (imported as a torch2cuda task under ``out/tasks``; it has no implementation, so no baseline)."""
    from veriforge.cuda.evaluate.harness import resolve_task

    path = Path(target)
    if path.suffix == ".py" and path.is_file():
        from veriforge.cuda.tasks.importers import import_kernelbench

        specs = import_kernelbench(path, out / "tasks")
        if not specs:
            raise VeriforgeError(f"{target} is not a KernelBench problem (needs `class Model` and `get_inputs`)")
        return specs[0]
    return resolve_task(target)


def _model(model: str, base_url: str | None) -> str:
    if base_url is None:
        return model
    if "@" in model:
        raise VeriforgeError("--base-url given, but the model string already names an endpoint (MODEL@URL)")
    return f"{model}@{base_url.rstrip('/')}"


def refine_cmd(
    target: Annotated[str, typer.Argument(help="Bundled task id (c2cuda/sum_reduce), task folder, or a "
                                          "KernelBench-format .py problem.")],
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model string (docs/llm.md), e.g. "
                                              "vllm:Qwen/..., NAME with --base-url, or scripted:FILE.jsonl to "
                                              "replay answers (default: setting llm.model).")] = None,
    turns: Annotated[int, typer.Option("--turns", "-k", min=1, help="Turns (attempts) in the episode.")] = 3,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint for --model.")] = None,
    backend: Annotated[str | None, typer.Option("--backend", "-b", help="cpu (estimated times) or gpu (measured). "
                                                "Default: setting cuda.backend, cpu.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the run folders (report.html, attempts, "
                                      "best source).")] = Path("cudaperf-refine-out"),
    resume: Annotated[str | None, typer.Option("--resume", help="Resume an interrupted run by its id.")] = None,
    reward_preset: Annotated[str, typer.Option("--reward", help="Reward preset: veriforge, kevin, kernelgym.")] = (
        "veriforge"),
    temperature: Annotated[float | None, typer.Option("--temperature", help="Sampling temperature.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="Answer length limit.")] = None,
    store_path: Annotated[Path | None, typer.Option("--store", help="Run store file (default: the configured "
                                                    "one).")] = None,
) -> None:
    """Refine a task over several turns with a model: each answer is verified, rewarded and answered with
    feedback; every attempt goes to the run store and an HTML report."""
    from rich.console import Console

    from veriforge.cli.preflight import check_model, prepare_out
    from veriforge.cli.progress import interrupted, new_run_id, run_interruptible
    from veriforge.core.config import active_settings

    settings = active_settings()
    model = model or settings.llm.model
    if not model:
        _fail("no model: give --model or set llm.model (--set llm.model=..., veriforge.toml); see docs/llm.md")
    assert model is not None
    backend = backend or settings.cuda.backend
    console = Console()
    run_id = resume or new_run_id()  # known before the first turn, so Ctrl-C can say how to resume
    hint = interrupted(run_id, kept="finished turns are in the run store", option="--resume")
    def work() -> None:
        name = _model(model, base_url)
        with prepare_out(out, command="veriforge cudaperf refine", run_id=run_id):
            console.print(f"model {name}: {check_model(name)}", markup=False, highlight=False, soft_wrap=True)
            _run(console, target, name, turns, backend, out, run_id, reward_preset, temperature, max_tokens,
                 store_path)

    run_interruptible(lambda: hint, work, _fail)


def _run(console: Any, target: str, model: str, turns: int, backend: str, out: Path, resume: str | None,
         preset: str, temperature: float | None, max_tokens: int | None, store_path: Path | None) -> None:
    from rich.table import Table

    from veriforge.core.store import RunStore
    from veriforge.cudaperf.refine import Attempt, refine_task

    spec = resolve_target(target, out)
    store = RunStore(store_path) if store_path else RunStore()

    def live(a: Attempt) -> None:
        tag = " (recorded)" if a.replayed else ""
        speed = "" if a.speedup is None else f", {a.speedup:.3g}x {a.provenance}"
        console.print(f"turn {a.turn}: {a.outcome}, reward {a.reward:+.3f}{speed}{tag}", markup=False,
                      highlight=False, soft_wrap=True)

    console.print(f"refining {spec.id} with {model}, {turns} turn(s), {backend} back-end", markup=False,
                  highlight=False, soft_wrap=True)
    result = refine_task(spec, model, turns=turns, backend=backend, store=store, config=preset, run_id=resume,
                         out_dir=out, temperature=temperature, max_tokens=max_tokens, on_attempt=live)
    table = Table(title=f"CudaPerf refine · {result.task_id} · run {result.run_id}")
    for col in ("turn", "outcome", "reward", "speed-up", "reason"):
        table.add_column(col)
    for a in result.attempts:
        speed = "–" if a.speedup is None else f"{a.speedup:.3g}× ({a.provenance})"
        style = "green" if a.correct else "red"
        table.add_row(str(a.turn), f"[{style}]{a.outcome}[/]", f"{a.reward:+.3f}", speed,
                      (a.reason or "")[:70].replace("[", "\\["))
    console.print(table)
    b = result.best
    console.print(f"best: turn {b.turn} ({b.outcome}, reward {b.reward:+.3f}); baseline: {result.baseline}",
                  markup=False, highlight=False, soft_wrap=True)
    console.print(f"report: {result.report}", markup=False, highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``refine`` to the ``veriforge cudaperf`` app."""
    app.command("refine")(refine_cmd)
