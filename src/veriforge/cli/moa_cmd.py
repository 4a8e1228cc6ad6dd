"""``veriforge moa``: ask one question, sweep a benchmark grid, distill the Reviewer (docs/moa.md).

Heavy imports (the engine, the LLM clients, matplotlib, torch for distillation) happen inside the
commands so ``veriforge --help`` stays fast. Errors veriforge raises on purpose (no model
configured, a bad config, an unknown suite) print one ``error:`` line and exit with code 2.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from veriforge.errors import VeriforgeError

app = typer.Typer(help="ReM-MoA: Mixture-of-Agents with a ranked reasoning memory.", no_args_is_help=True)

ALL_METHODS = "rem_moa,moa,self_moa,self_consistency,single"
REVIEWER_HELP = ("Reviewer (overrides the config's reviewer table): reward:DIR (distilled reward model), "
                 "judge:module:attr, llm, or a model string for the LLM judge.")


def _fail(text: str, code: int = 2) -> None:
    typer.echo(f"error: {text}", err=True)
    raise typer.Exit(code)


def _settings(ctx: typer.Context) -> Any:
    from veriforge.cli.main import state

    return state(ctx).settings()


FINAL_HELP = ("ReM-MoA final answer: weighted_vote (default), top, vote or aggregate (overrides the config's "
              "final.policy; docs/moa.md, Final answer).")


def _config(path: Path | None, reviewer: str | None = None, final: str | None = None,
            evaluate_all: bool | None = None, **overrides: Any) -> Any:
    from veriforge.moa.config import FINAL_POLICIES, MoAConfig, load_config
    from veriforge.moa.errors import MoAConfigError

    cfg = load_config(path) if path is not None else MoAConfig()
    changes = {k: v for k, v in overrides.items() if v is not None}
    if final is not None or evaluate_all is not None:
        if final is not None and final not in FINAL_POLICIES:
            raise MoAConfigError(f"--final {final!r}: choose one of {', '.join(FINAL_POLICIES)}")
        changes["final"] = {**cfg.final.model_dump(), **({"policy": final} if final is not None else {}),
                            **({"evaluate_all": evaluate_all} if evaluate_all is not None else {})}
    if reviewer is not None:  # --reviewer SPEC replaces the [reviewer] kind (veriforge.moa.reviewers)
        from veriforge.moa.reviewers import reviewer_spec_updates

        changes["reviewer"] = {**cfg.reviewer.model_dump(), **reviewer_spec_updates(reviewer)}
    return cfg.replace(**changes) if changes else cfg


@app.command("ask")
def ask_cmd(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question to answer.")],
    config: Annotated[Path | None, typer.Option("--config", "-f", help="MoA config TOML (docs/moa.md).")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model for agents without one.")] = None,
    method: Annotated[str | None, typer.Option("--method", help="rem_moa, moa, self_moa, self_consistency "
                                                                "or single (overrides the config).")] = None,
    depth: Annotated[int | None, typer.Option("--depth", min=1, help="Layers (overrides the config).")] = None,
    width: Annotated[int | None, typer.Option("--width", min=1, help="Agents per layer.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Name the run (resume an interrupted one).")] = None,
    traces_out: Annotated[Path | None, typer.Option("--traces-out", help="Append the traces as JSONL "
                                                                         "(input for `moa distill`).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    reviewer: Annotated[str | None, typer.Option("--reviewer", help=REVIEWER_HELP)] = None,
    final: Annotated[str | None, typer.Option("--final", help=FINAL_HELP)] = None,
) -> None:
    """Answer QUESTION with ReM-MoA (or a baseline); print the answer and the memory's ranking."""
    try:
        from veriforge.cli.preflight import check_models
        from veriforge.cli.progress import new_run_id
        from veriforge.core.store import RunStore
        from veriforge.moa.engine import MoAEngine

        settings = _settings(ctx)
        cfg = _config(config, reviewer, final, method=method, depth=depth, width=width)
        store = RunStore.from_settings(settings)
        engine = MoAEngine(cfg, default_model=model, settings=settings, store=store)
        check_models({engine.model_name(m) for m in cfg.models()}, settings.llm)
        run_id = run_id or new_run_id()  # known up front, so Ctrl-C can say how to resume

        async def go() -> Any:
            try:
                return await engine.run(question, run_id=run_id)
            finally:
                await engine.aclose()

        result = asyncio.run(go())
    except VeriforgeError as exc:
        _fail(str(exc))
        return
    except KeyboardInterrupt:
        from veriforge.cli.progress import INTERRUPTED_EXIT, interrupted

        typer.echo(interrupted(run_id, kept="finished layers are in the run store"), err=True)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    if traces_out is not None and result.memory is not None:
        with traces_out.open("a", encoding="utf-8") as fh:
            for t in result.memory.proposals():
                fh.write(json.dumps({"question": question, "question_id": result.run_id, "id": t.id,
                                     "response": t.reasoning, "answer": t.answer}) + "\n")
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json"), indent=2))
        return
    _print_result(result)


def _print_result(result: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]run[/] {result.run_id}  [bold]method[/] {result.method}")
    if result.ranking:
        table = Table(title="ranked reasoning memory (reviewer)")
        for col in ("rank", "trace", "layer", "agent", "answer", "score", "games", "verified"):
            table.add_column(col)
        for r in result.ranking:
            score = "" if r.score is None else f"{r.score:.2f}"
            verified = "" if r.verified is None else str(r.verified)
            table.add_row(str(r.rank), r.id, str(r.layer), r.agent, str(r.answer), score, str(r.games), verified)
        console.print(table)
    spend = result.account
    cost = "unpriced" if spend.get("cost_usd") is None else f"${spend['cost_usd']:.4f}"
    console.print(f"[bold]tokens[/] {spend.get('total_tokens', 0)}  [bold]calls[/] {spend.get('calls', 0)}  "
                  f"[bold]cost[/] {cost}")
    console.print(f"[bold]references[/] {', '.join(result.final_refs)}")
    if result.policy_answers:  # what every final-answer policy says, so a disagreement is visible
        console.print("[bold]final policies[/] " + "  ".join(
            f"{name}={answer}" for name, answer in result.policy_answers.items()))
    typer.echo(result.text.strip())
    typer.echo(f"\nANSWER: {result.answer if result.parsed else '(no answer could be extracted)'}")


@app.command("bench")
def bench_cmd(
    ctx: typer.Context,
    suite: Annotated[str, typer.Option("--suite", help="gsm8k, math, folio, prontoqa, humaneval, mbpp, mmlu, "
                                                       "mmlu_pro, commonsenseqa, strategyqa")],
    out: Annotated[Path, typer.Option("--out", help="Directory for results.{csv,json,md} and plots.")],
    data: Annotated[Path | None, typer.Option("--data", help="Local file in the suite's public format "
                                                             "(default: the bundled sample).")] = None,
    depth: Annotated[str, typer.Option("--depth", help="Depths: 1..6, 1,2,4 or 3.")] = "1..3",
    width: Annotated[str, typer.Option("--width", help="Widths: 3, 1..5 or 2,4.")] = "3",
    methods: Annotated[str, typer.Option("--methods", help="Comma-separated methods.")] = ALL_METHODS,
    config: Annotated[Path | None, typer.Option("--config", "-f", help="Base MoA config TOML.")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model for agents without one.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Use only the first N items.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Items answered at once.")] = 4,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="LLM request cache (off: honest token "
                                                                    "counts per cell).")] = False,
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write PNG plots (needs matplotlib).")] = True,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Bench id: names every item's stored run, so "
                                                                "the same id resumes (default: derived from "
                                                                "suite, data, config and grid).")] = None,
    export_distill: Annotated[Path | None, typer.Option("--export-distill", help="Also write the runs' "
                                                                              "proposals (traces.jsonl) and the "
                                                                              "Reviewer's comparisons "
                                                                              "(judgements.jsonl) here, for "
                                                                              "`moa distill`.")] = None,
    reviewer: Annotated[str | None, typer.Option("--reviewer", help=REVIEWER_HELP)] = None,
    final: Annotated[str | None, typer.Option("--final", help=FINAL_HELP)] = None,
    all_policies: Annotated[bool, typer.Option(
        "--all-policies/--configured-policy", help="ReM-MoA cells: also run the aggregator when another policy "
        "answers, so every final policy is scored from the same runs (its spend is reported apart: the "
        "noagg_* columns are what the free policies cost).")] = True,
) -> None:
    """Depth × width grid for ReM-MoA and the baselines over a suite; writes a table and plots.

    Resumable: every item's run is stored, so running the same command again (or passing the
    printed --run-id) skips finished items and resumes interrupted ones. An item that fails is
    recorded as that item's error (exit code 1), not the grid's, and retried on the next run.
    """
    from veriforge.cli.progress import interrupted, run_interruptible

    ids: list[str] = []  # the bench id, once _bench has derived it

    def hint() -> str:
        return interrupted(ids[0] if ids else None, kept="finished items are in the run store")

    done = run_interruptible(
        hint,
        lambda: _bench(ctx, suite, out, data, depth, width, methods, config, model, limit, concurrency, cache,
                       plots, run_id, export_distill, reviewer=reviewer, final=final, all_policies=all_policies,
                       ids=ids),
        _fail,
    )
    if done is None:
        return
    result_paths, cells = done
    for cell in cells:
        row = cell.row()
        typer.echo(f"{row['method']:>17} d={row['depth']} w={row['width']}  acc={row['accuracy']:.3f}  "
                   f"errors={row['errors']}  parse_fail={row['parse_failures']}  "
                   f"requests/item={row['requests_per_item']}  tokens/item={row['tokens_per_item']}")
    for name, path in result_paths.items():
        typer.echo(f"{name}: {path}")
    errors = [(c, i) for c in cells for i in c.items if i.error]
    if errors:
        cell, first = errors[0]
        typer.echo(f"error: {len(errors)} item(s) failed (first: {cell.method} d={cell.depth} w={cell.width} "
                   f"{first.item_id}: {first.error}); run the same command again to retry them", err=True)
        raise typer.Exit(1)


def bench_id_for(suite: str, items: list[Any], config: Any, methods: list[str], depths: list[int],
                 widths: list[int], model: str | None) -> str:
    """The default bench id: a digest of what decides the results (the items' content, the config,
    the grid and the default model), so rerunning the same command resumes the same bench."""
    from veriforge.core.hashing import content_hash

    data = content_hash(*[json.dumps([it.id, it.question, it.answer, it.instruction]) for it in items])
    grid = json.dumps({"methods": methods, "depths": depths, "widths": widths, "model": model}, sort_keys=True)
    digest = content_hash("moa-bench", suite, data, json.dumps(config.model_dump(mode="json"), sort_keys=True), grid)
    return f"bench-{suite}-{digest[:12]}"


def _bench(ctx: typer.Context, suite: str, out: Path, data: Path | None, depth: str, width: str, methods: str,
           config: Path | None, model: str | None, limit: int | None, concurrency: int, cache: bool,
           plots: bool, run_id: str | None = None, export_distill: Path | None = None,
           reviewer: str | None = None, final: str | None = None, all_policies: bool = True,
           ids: list[str] | None = None) -> tuple[dict[str, Path], list[Any]]:
    from veriforge.cli.preflight import check_models, prepare_out
    from veriforge.moa.bench import load_suite
    from veriforge.moa.engine import MoAEngine
    from veriforge.moa.scaling import parse_int_range

    settings = _settings(ctx)
    depths, widths = parse_int_range(depth), parse_int_range(width)
    method_list = [m.strip() for m in methods.split(",") if m.strip()]
    items = load_suite(suite, data, limit=limit)
    if not items:
        raise VeriforgeError(f"suite {suite!r} has no items")
    base = _config(config, reviewer, final, evaluate_all=True if all_policies else None)
    instructions = {item.instruction for item in items}
    shared = len(instructions) == 1
    if shared:  # the suite's answer format replaces the generic "Answer: <answer>" instruction
        base = base.replace(instruction=next(iter(instructions)) or base.instruction)
    llm = settings.llm.model_copy(update={"cache": cache})
    # Resolve every model once (fails early with the configuration hint) and share the clients.
    probe = MoAEngine(base.replace(method="rem_moa"), default_model=model, settings=settings)
    names = {probe.model_name(m) for m in base.replace(method="rem_moa").models()}
    bench_id = run_id or bench_id_for(suite, items, base, method_list, depths, widths, model)
    if ids is not None:
        ids.append(bench_id)
    # before any request: --out is usable and no other bench writes there; every model answers
    with prepare_out(out, command="veriforge moa bench", run_id=bench_id):
        if _unfinished(settings, bench_id, method_list, depths, widths, items):
            check_models(names, llm)  # a finished bench only rewrites its results: no model needed
        return _bench_run(settings, suite, out, data, items, base, method_list, depths, widths, model, cache,
                          plots, concurrency, bench_id, shared, llm, names, probe, export_distill)


def _unfinished(settings: Any, bench_id: str, methods: list[str], depths: list[int], widths: list[int],
                items: list[Any]) -> int:
    """How many grid items have no stored answer yet under ``bench_id`` (those need the models)."""
    from veriforge.core.store import RunStore
    from veriforge.moa.scaling import NS_BENCH_ITEM, grid_cells, item_run_id

    store = RunStore.from_settings(settings)
    try:
        missing = 0
        for method, depth, width in grid_cells(methods, depths, widths):
            for item in items:
                rec = store.get_record(NS_BENCH_ITEM, item_run_id(bench_id, method, depth, width, str(item.id)))
                missing += rec is None or rec.get("error") is not None or "correct" not in rec
        return missing
    finally:
        store.close()


def _bench_run(settings: Any, suite: str, out: Path, data: Path | None, items: list[Any], base: Any,
               method_list: list[str], depths: list[int], widths: list[int], model: str | None, cache: bool,
               plots: bool, concurrency: int, bench_id: str, shared: bool, llm: Any, names: set[str],
               probe: Any, export_distill: Path | None) -> tuple[dict[str, Path], list[Any]]:
    """The grid itself, once the output folder is locked and the models answered."""
    import sys

    from veriforge.core.store import RunStore
    from veriforge.llm.factory import create_client
    from veriforge.moa.bench import extract_answer, score_async
    from veriforge.moa.extract import Extracted
    from veriforge.moa.scaling import BenchWriter, run_grid
    from veriforge.moa.scaling import export_distill as export

    store = RunStore.from_settings(settings)
    typer.echo(f"bench id: {bench_id} (interrupted? run the same command again, or add --run-id {bench_id}, "
               f"to resume; finished items are read from {store.path})", err=True)
    clients = {name: create_client(name, llm) for name in names}

    def extractor_for(item: Any) -> Any:
        choices = tuple(item.meta.get("choices") or ())

        def extract(text: str) -> Extracted:
            answer = extract_answer(item.suite, text, choices=choices)
            return Extracted(answer, answer is not None, f"{item.suite} extraction")

        return extract

    meta = {"suite": suite, "data": str(data) if data else "bundled", "items": len(items), "depths": depths,
            "widths": widths, "methods": method_list, "config": base.model_dump(mode="json"), "cache": cache,
            "bench_id": bench_id}
    quiet = sys.stderr.isatty()  # a terminal gets the table at the end; logs and pipes get a line per item
    writer = BenchWriter(out, title=f"ReM-MoA scaling on {suite}", meta=meta,
                         log=None if quiet else (lambda line: typer.echo(line, err=True)))

    async def go() -> list[Any]:
        try:
            return await run_grid(items, base, methods=method_list, depths=depths, widths=widths, score=score_async,
                                  extractor_for=extractor_for,
                                  question_of=(lambda it: it.question) if shared else (lambda it: it.prompt),
                                  engine_options={"clients": clients, "default_model": model, "settings": settings},
                                  concurrency=concurrency, on_item=writer.item, on_cell=writer.cell, store=store,
                                  bench_id=bench_id)
        finally:
            for client in clients.values():
                await client.aclose()

    try:
        cells = asyncio.run(go())
        paths = writer.finish(cells, plots=plots)
        if export_distill is not None:
            rc = base.reviewer  # a reward/judge reviewer is named by its spec, not the aggregator's model
            judged_by = (probe.model_name(base.reviewer_model()) if rc.kind == "llm"
                         else f"{rc.kind}:{rc.reward_model or rc.judge}")
            paths.update({f"distill_{k}": v for k, v in export(cells, store, export_distill,
                                                               reviewer_model=judged_by).items()})
    finally:
        store.close()
    return paths, cells


@app.command("distill")
def distill_cmd(
    ctx: typer.Context,
    base_model: Annotated[Path, typer.Option("--base-model", help="Local transformers model to train.")],
    out: Annotated[Path, typer.Option("--out", help="Output directory (judgements, report, reviewer).")],
    data: Annotated[Path | None, typer.Option("--data", help="Traces JSONL (e.g. from `moa ask --traces-out` "
                                                            "or `moa bench --export-distill`).")] = None,
    teacher: Annotated[str | None, typer.Option("--teacher", help="Teacher model string (default: setting llm.model).")]
    = None,
    steps: Annotated[int, typer.Option("--steps", min=1)] = 100,
    learning_rate: Annotated[float, typer.Option("--learning-rate")] = 1e-5,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 8,
    max_pairs_per_question: Annotated[int | None, typer.Option("--max-pairs-per-question", min=1)] = None,
    test_fraction: Annotated[float, typer.Option("--test-fraction")] = 0.25,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1)] = 4,
    tie_margin: Annotated[float, typer.Option("--tie-margin")] = 0.0,
    max_length: Annotated[int, typer.Option("--max-length", min=8)] = 512,
    judgements: Annotated[Path | None, typer.Option("--judgements", help="Train on these JudgedPair verdicts "
                                                                        "(e.g. `moa bench --export-distill`'s "
                                                                        "judgements.jsonl) instead of asking "
                                                                        "a teacher.")] = None,
) -> None:
    """Distill the Reviewer from a stronger teacher's pairwise judgements (delegates to moa.distill)."""
    try:
        from veriforge.llm.errors import LLMConfigError
        from veriforge.llm.naming import no_model_message
        from veriforge.moa.distill import main_cli

        teacher_model = teacher or _settings(ctx).llm.model
        if judgements is None and data is None:
            raise LLMConfigError("pass --data traces.jsonl (and a teacher), or --judgements judgements.jsonl")
        if not teacher_model and judgements is None:
            raise LLMConfigError("no teacher model: pass --teacher MODEL. " + no_model_message())
        from veriforge.cli.preflight import check_model, prepare_out

        with prepare_out(out, command="veriforge moa distill"):
            if judgements is None:
                check_model(teacher_model)  # the teacher judges every pair: it must answer first
            report = main_cli(teacher_model, data, base_model, out, steps=steps, learning_rate=learning_rate,
                              batch_size=batch_size, max_pairs_per_question=max_pairs_per_question,
                              test_fraction=test_fraction, seed=seed, concurrency=concurrency,
                              tie_margin=tie_margin, max_length=max_length, judgements=judgements)
    except VeriforgeError as exc:
        _fail(str(exc))
        return
    typer.echo(report.summary())
    typer.echo(f"report: {Path(out) / 'report.json'}")
