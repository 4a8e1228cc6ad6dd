"""The scaling runner: a depth × width grid for ReM-MoA and each baseline over a benchmark suite.

For every method and every (depth, width) cell, every item is answered by the engine, scored by
the benchmark's scorer (parse failures count as wrong and are reported) and its spend is read from
the run's own account. ``single`` has one cell (1, 1); ``self_consistency`` samples depth × width
times. The results are written as a table (CSV, JSON, Markdown) and plots (accuracy vs depth, vs
width, vs tokens, vs requests) by :func:`write_results`.

Cost sits next to accuracy in every row — requests (LLM calls) and billed tokens per item, the sum
of the items' engine seconds and the cell's wall time, and dollars where the models are priced —
because a method that is a few points better at fifty times the requests is not better. Token
numbers are what the back-ends billed; samples served from a request cache cost nothing, so run
grids with the cache off (the CLI does) when cost matters.

Resumable and failure-tolerant (with a :class:`~veriforge.core.store.RunStore` and a bench id):

* every item of every cell is an engine run with a deterministic id ``<bench>/<method>-d<D>-w<W>/<item>``,
  so an interrupted item resumes where it stopped (stored traces and verdicts are not asked again);
* a finished item's :class:`ItemResult` is stored (namespace ``moa.bench_item``) and read back
  instead of asking the models again, so a killed grid resumes without repeating finished requests;
* an item whose run raises a :class:`~veriforge.errors.VeriforgeError` (an LLM failure after
  retries, an unparseable reply, ...) becomes that item's ``error`` — wrong, counted in the cell's
  ``errors`` — and is retried on the next run; it does not abort the grid.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veriforge.core.hashing import content_hash
from veriforge.errors import StoreError, VeriforgeError
from veriforge.moa.config import METHODS, MoAConfig
from veriforge.moa.engine import MoAEngine, MoAResult
from veriforge.moa.errors import MoAConfigError
from veriforge.moa.extract import Extractor, default_extractor
from veriforge.moa.memory import ReasoningMemory

if TYPE_CHECKING:
    from veriforge.core.store import RunStore

__all__ = ["NS_BENCH_CELL", "NS_BENCH_ITEM", "POLICIES", "BenchWriter", "CellResult", "ItemResult",
           "export_distill", "grid_cells", "item_run_id", "parse_int_range", "run_grid", "write_results"]

#: ``score(item, text) -> Score`` (``correct``, ``parsed``, ``parse_failed``); may be async.
ScoreFn = Callable[[Any, str], Any]

#: Store namespaces: one record per finished item (key: its engine run id) and per finished cell.
NS_BENCH_ITEM = "moa.bench_item"
NS_BENCH_CELL = "moa.bench_cell"

#: ReM-MoA's final-answer policies, scored side by side from one run when the engine reports them.
POLICIES = ("aggregate", "top", "vote", "weighted_vote")


@dataclass
class ItemResult:
    """One item answered in one cell.

    ``calls``/``tokens``/``cost_usd`` are the run's whole spend (including what an interrupted
    earlier attempt spent before its last finished layer); ``seconds`` the engine's time on it.
    ``error`` is one line when the run failed (the item then counts as wrong). ``policy_correct``
    scores every ReM-MoA final policy's text; ``aggregator_*`` is the final aggregation's share of
    the spend — what the request-free policies (top, votes) do not pay.
    """

    item_id: str
    answer: str | None
    correct: bool
    parse_failed: bool
    tokens: int
    cost_usd: float | None
    calls: int = 0
    seconds: float = 0.0
    error: str | None = None
    run_id: str | None = None
    policy_correct: dict[str, bool] = field(default_factory=dict)
    aggregator_calls: int = 0
    aggregator_tokens: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ItemResult:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class CellResult:
    """Accuracy and spend of one (method, depth, width) cell over the suite.

    ``seconds`` is the cell's wall time in the invocation that finished it; ``item_seconds`` the sum
    of its items' engine seconds (what a one-at-a-time run would take); ``reused`` counts items read
    back from the store instead of being run (not written to the results: it depends on history).
    """

    method: str
    depth: int
    width: int
    n: int
    correct: int
    parse_failures: int
    tokens_total: int
    cost_usd: float | None
    seconds: float
    errors: int = 0
    calls_total: int = 0
    item_seconds: float = 0.0
    items: list[ItemResult] = field(default_factory=list, repr=False)
    reused: int = field(default=0, repr=False)

    @classmethod
    def from_items(cls, method: str, depth: int, width: int, items: Sequence[ItemResult], seconds: float,
                   reused: int = 0) -> CellResult:
        costs = [r.cost_usd for r in items]
        return cls(method=method, depth=depth, width=width, n=len(items), correct=sum(r.correct for r in items),
                   parse_failures=sum(r.parse_failed for r in items if r.error is None),
                   tokens_total=sum(r.tokens for r in items),
                   cost_usd=None if any(c is None for c in costs) else float(sum(c or 0.0 for c in costs)),
                   seconds=seconds, errors=sum(r.error is not None for r in items),
                   calls_total=sum(r.calls for r in items), item_seconds=sum(r.seconds for r in items),
                   items=list(items), reused=reused)

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else math.nan

    @property
    def tokens_per_item(self) -> float:
        return self.tokens_total / self.n if self.n else math.nan

    @property
    def requests_per_item(self) -> float:
        return self.calls_total / self.n if self.n else math.nan

    def policy_accuracy(self) -> dict[str, float]:
        """Accuracy of each final policy the items were scored under (ReM-MoA cells only)."""
        names = [p for p in POLICIES if any(p in i.policy_correct for i in self.items)]
        return {p: sum(bool(i.policy_correct.get(p)) for i in self.items) / self.n for p in names} if self.n else {}

    def row(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "method": self.method, "depth": self.depth, "width": self.width, "n": self.n,
            "correct": self.correct, "accuracy": round(self.accuracy, 4), "errors": self.errors,
            "parse_failures": self.parse_failures, "requests_per_item": round(self.requests_per_item, 2),
            "tokens_per_item": round(self.tokens_per_item, 1), "tokens_total": self.tokens_total,
            "requests_total": self.calls_total, "cost_usd": self.cost_usd,
            "item_seconds": round(self.item_seconds, 2), "seconds": round(self.seconds, 2)}
        policies = self.policy_accuracy()
        if policies and self.n:
            row.update({f"acc_{p}": round(a, 4) for p, a in policies.items()})
            agg_calls = sum(i.aggregator_calls for i in self.items)
            agg_tokens = sum(i.aggregator_tokens for i in self.items)
            # top / vote / weighted_vote need no aggregation call: their cost is the run's minus the aggregator's
            row["noagg_requests_per_item"] = round((self.calls_total - agg_calls) / self.n, 2)
            row["noagg_tokens_per_item"] = round((self.tokens_total - agg_tokens) / self.n, 1)
        return row


def parse_int_range(text: str) -> list[int]:
    """``"1..6"`` → 1–6, ``"1,3,5"`` → those, ``"3"`` → [3] (for ``--depth``/``--width``)."""
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if ".." in part:
                lo, hi = (int(x) for x in part.split(".."))
                if hi < lo:
                    raise ValueError
                out.extend(range(lo, hi + 1))
            elif part:
                out.append(int(part))
    except ValueError:
        raise MoAConfigError(f"expected a range like 1..6, a list like 1,3,5 or a number, got {text!r}") from None
    if not out or min(out) < 1:
        raise MoAConfigError(f"depths and widths must be positive integers, got {text!r}")
    return sorted(dict.fromkeys(out))


def grid_cells(methods: Iterable[str], depths: Sequence[int], widths: Sequence[int]) -> list[tuple[str, int, int]]:
    """The cells to run: every (depth, width) for each method, one (1, 1) cell for ``single``."""
    cells = []
    for method in methods:
        if method not in METHODS:
            raise MoAConfigError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
        if method == "single":
            cells.append((method, 1, 1))
        else:
            cells += [(method, d, w) for d in depths for w in widths]
    return cells


def item_run_id(bench_id: str, method: str, depth: int, width: int, item_id: str) -> str:
    """The engine run id of one item in one cell (deterministic, so a rerun finds it)."""
    return f"{bench_id}/{method}-d{depth}-w{width}/{item_id}"


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    out = fn(*args)
    return await out if isinstance(out, Awaitable) else out


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    return f"{type(exc).__name__}: {text}"[:500]


async def run_grid(
    items: Sequence[Any],
    base: MoAConfig,
    *,
    methods: Sequence[str],
    depths: Sequence[int],
    widths: Sequence[int],
    score: ScoreFn,
    extractor_for: Callable[[Any], Extractor] | None = None,
    question_of: Callable[[Any], str] = lambda item: item.prompt,
    engine_options: dict[str, Any] | None = None,
    concurrency: int = 4,
    on_cell: Callable[[CellResult], None] | None = None,
    on_item: Callable[[tuple[str, int, int], ItemResult, bool], None] | None = None,
    store: RunStore | None = None,
    bench_id: str | None = None,
) -> list[CellResult]:
    """Run every cell over ``items`` (``concurrency`` items at a time); results in cell order.

    ``engine_options`` go to :class:`MoAEngine` (``clients``, ``default_model``, ``settings``);
    pass shared ``clients`` so connections are reused across cells. With ``store`` (and a
    ``bench_id`` naming this grid) every item runs under :func:`item_run_id` and finished items
    are read back instead of re-run (see the module docstring). ``on_item(cell, item, reused)``
    is called as each item finishes (``reused``: read back from the store), ``on_cell`` as each
    cell does.
    """
    options = dict(engine_options or {})
    store = store if store is not None else options.pop("store", None)
    options.pop("store", None)
    if store is not None and not bench_id:
        raise MoAConfigError("a resumable grid needs a bench id (bench_id=...) to name its runs")
    ids = [str(getattr(item, "id", "")) for item in items]
    if store is not None and (not all(ids) or len(set(ids)) != len(ids)):
        raise MoAConfigError("a resumable grid needs a unique, non-empty `id` on every item (results are stored by it)")
    results = []
    for method, depth, width in grid_cells(methods, depths, widths):
        config = base.replace(method=method, depth=depth, width=width)
        config_hash = content_hash("moa-bench-config", json.dumps(config.model_dump(mode="json"), sort_keys=True))
        semaphore = asyncio.Semaphore(max(1, concurrency))
        started = time.monotonic()
        key = (method, depth, width)

        async def one(item: Any, config: MoAConfig = config, config_hash: str = config_hash,
                      semaphore: asyncio.Semaphore = semaphore,
                      key: tuple[str, int, int] = key) -> tuple[ItemResult, bool]:
            async with semaphore:
                item_id = str(getattr(item, "id", ""))
                run_id = item_run_id(bench_id, *key, item_id) if store is not None and bench_id else None
                stored = _stored_item(store, run_id, config_hash, bench_id or "") if run_id else None
                if stored is not None and stored.get("error") is None and "correct" in stored:
                    done, reused = ItemResult.from_dict(stored), True
                else:
                    done = await _run_item(item, config, config_hash, run_id, stored, store, score,
                                           extractor_for, question_of, options)
                    reused = False
                if on_item is not None:
                    on_item(key, done, reused)
                return done, reused

        outcome = await asyncio.gather(*(one(item) for item in items))
        scored_items = [r for r, _ in outcome]
        reused = sum(flag for _, flag in outcome)
        seconds = time.monotonic() - started
        cell_key = f"{bench_id}/{method}-d{depth}-w{width}"
        if store is not None and reused == len(scored_items):
            seconds = float((store.get_record(NS_BENCH_CELL, cell_key) or {}).get("seconds", seconds))
        cell = CellResult.from_items(method, depth, width, scored_items, seconds, reused)
        if store is not None and cell.errors == 0:
            store.put_record(NS_BENCH_CELL, cell_key, {"seconds": seconds, "n": cell.n})
        results.append(cell)
        if on_cell is not None:
            on_cell(cell)
    return results


def _stored_item(store: RunStore | None, run_id: str, config_hash: str, bench_id: str) -> dict[str, Any] | None:
    if store is None:
        return None
    stored = store.get_record(NS_BENCH_ITEM, run_id)
    if stored is not None and stored.get("config_hash") != config_hash:
        raise MoAConfigError(f"bench {bench_id!r} was run with another configuration for {run_id}; "
                             "pass a new --run-id (or restore the configuration) instead of mixing results")
    return stored


async def _run_item(item: Any, config: MoAConfig, config_hash: str, run_id: str | None,
                    stored: dict[str, Any] | None, store: RunStore | None, score: ScoreFn,
                    extractor_for: Callable[[Any], Extractor] | None, question_of: Callable[[Any], str],
                    options: dict[str, Any]) -> ItemResult:
    """Answer (or resume) one item and score it; a failure becomes the item's ``error``.

    With a store the engine's answer is recorded before scoring (a code suite's scoring runs a
    sandbox and can be slow or fail), so a rerun scores it again without asking the models.
    """
    item_id = str(getattr(item, "id", ""))
    answered = stored if stored is not None and "text" in stored else None
    engine: MoAEngine | None = None
    engine_run = _engine_run_id(store, run_id)
    try:
        if answered is None:
            extractor = extractor_for(item) if extractor_for is not None else default_extractor
            engine = MoAEngine(config, extractor=extractor, store=store, **options)
            try:
                result: MoAResult = await engine.run(question_of(item), run_id=engine_run)
            finally:
                await engine.aclose()
            answered = {"text": result.text, "answer": result.answer, "account": result.account,
                        "seconds": result.seconds, "run_id": result.run_id,
                        "policy_texts": dict(getattr(result, "policy_texts", None) or {}),
                        "config_hash": config_hash, "error": None}
            if store is not None and run_id is not None:
                store.put_record(NS_BENCH_ITEM, run_id, answered, run_id=result.run_id)
        scored = await _call(score, item, answered["text"])
        policy_correct = {}
        for policy, text in answered["policy_texts"].items():
            verdict = scored if text == answered["text"] else await _call(score, item, text)
            policy_correct[policy] = bool(verdict.correct)
    except StoreError:
        raise  # the store itself is broken: not one item's failure
    except VeriforgeError as exc:
        spend = (answered["account"] if answered is not None
                 else engine.spent(engine_run) if engine is not None and engine_run is not None else {})
        failed = ItemResult(item_id=item_id, answer=None, correct=False, parse_failed=False,
                            tokens=int(spend.get("total_tokens", 0)), cost_usd=spend.get("cost_usd"),
                            calls=int(spend.get("calls", 0)),
                            seconds=float((answered or spend).get("seconds", 0.0)), error=_one_line(exc),
                            run_id=(answered or {}).get("run_id", run_id))
        if store is not None and run_id is not None:
            # keeps a finished engine answer (then only scoring is retried) next to the error
            store.put_record(NS_BENCH_ITEM, run_id, {**asdict(failed), **(answered or {}), "error": failed.error,
                                                     "config_hash": config_hash})
        return failed
    account = answered["account"]
    aggregator = (account.get("roles") or {}).get("aggregator") or {}
    done = ItemResult(item_id=item_id, answer=answered["answer"], correct=bool(scored.correct),
                      parse_failed=bool(scored.parse_failed), tokens=int(account.get("total_tokens", 0)),
                      cost_usd=account.get("cost_usd"), calls=int(account.get("calls", 0)),
                      seconds=round(float(answered["seconds"]), 4), run_id=answered["run_id"],
                      policy_correct=policy_correct,
                      aggregator_calls=int(aggregator.get("calls", 0)),
                      aggregator_tokens=int(aggregator.get("total_tokens", 0)))
    if store is not None and run_id is not None:
        store.put_record(NS_BENCH_ITEM, run_id, {**asdict(done), "config_hash": config_hash}, run_id=done.run_id)
    return done


def _engine_run_id(store: RunStore | None, run_id: str | None) -> str | None:
    """``run_id``, unless that run finished but its answer was never recorded (the process died in
    between): the engine cannot re-open a finished run, so the item is answered again under
    ``<run_id>~2`` (or the next unused suffix)."""
    if store is None or run_id is None:
        return run_id
    candidate, k = run_id, 1
    while True:
        info = store.get_run(candidate)
        if info is None or info.unfinished:
            return candidate
        k += 1
        candidate = f"{run_id}~{k}"


# ------------------------------------------------------------------------------------------ results

COLUMNS_EXPLAINED = """\
Columns: `accuracy` counts parse failures and errors as wrong; `errors` are items whose run failed
(an LLM error after retries, ...; retried when the same bench is run again); `requests_per_item` and
`tokens_per_item` are LLM calls and billed tokens per item (a call with n samples is one request);
`cost_usd` is empty when a model has no price; `item_seconds` is the sum of the items' engine time
(what answering them one at a time would take), `seconds` the cell's wall time (items run
concurrently). For ReM-MoA, `acc_<policy>` scores every final-answer policy on the same runs, and
`noagg_requests_per_item` / `noagg_tokens_per_item` are what the request-free policies (top, vote,
weighted_vote) cost: the run minus its final aggregation. Tokens are billed tokens (cached samples
cost nothing)."""


def _table(cells: Sequence[CellResult]) -> tuple[list[str], list[dict[str, Any]]]:
    """Rows of every cell under one header (policy columns only exist for ReM-MoA cells)."""
    rows = [c.row() for c in cells]
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    return cols, [{c: r.get(c) for c in cols} for r in rows]


def _markdown(cols: list[str], rows: list[dict[str, Any]], title: str) -> str:
    if not rows:
        return f"# {title}\n\n(no results)\n"
    lines = [f"# {title}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |")
    lines += ["", COLUMNS_EXPLAINED]
    return "\n".join(lines) + "\n"


def _write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` in one step, so a reader (or a kill) never sees half a results file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _results_json(title: str, meta: dict[str, Any], cells: Sequence[CellResult],
                  rows: list[dict[str, Any]]) -> str:
    """``{"title", "meta", "cells": [{...row, "items": [...]}]}`` with one line per cell row and per
    item: a grid has thousands of items, and an indented dump is mostly whitespace and unreadable diffs."""
    blocks = []
    for cell, row in zip(cells, rows, strict=True):
        items = ",\n      ".join(json.dumps(asdict(i)) for i in cell.items)
        head = json.dumps(row)[:-1]
        blocks.append(f'{head}, "items": [\n      {items}\n    ]}}' if items else f'{head}, "items": []}}')
    body = ",\n    ".join(blocks)
    return (f'{{\n  "title": {json.dumps(title)},\n  "meta": {json.dumps(meta)},\n'
            f'  "cells": [\n    {body}\n  ]\n}}\n' if blocks else
            json.dumps({"title": title, "meta": meta, "cells": []}, indent=2) + "\n")


def write_results(cells: Sequence[CellResult], out_dir: str | Path, *, title: str = "ReM-MoA scaling",
                  plots: bool = True, meta: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write ``results.csv``, ``results.json`` (rows + per-item answers), ``results.md`` and, with
    ``plots``, ``accuracy_vs_{depth,width,tokens,requests}.png``."""
    import io

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cols, rows = _table(cells)
    paths = {"csv": out / "results.csv", "json": out / "results.json", "markdown": out / "results.md"}
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=cols or ["method"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    _write_atomic(paths["csv"], buffer.getvalue())
    _write_atomic(paths["json"], _results_json(title, meta or {}, cells, rows))
    _write_atomic(paths["markdown"], _markdown(cols, rows, title))
    if plots and cells:
        from veriforge.moa.plots import plot_scaling

        paths.update(plot_scaling(cells, out, title=title))
    return paths


class BenchWriter:
    """Incremental output of a grid: results rewritten after every cell, one JSONL line per item.

    Pass :meth:`item` as ``on_item`` and :meth:`cell` as ``on_cell`` to :func:`run_grid`; call
    :meth:`finish` at the end (plots are drawn only then). ``progress.jsonl`` gets a line for every
    item answered in this invocation (not for items read back from the store) and one per cell;
    ``log`` (e.g. a stderr writer) gets a human line for each.
    """

    def __init__(self, out_dir: str | Path, *, title: str, meta: dict[str, Any] | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.title, self.meta, self.log = title, meta or {}, log
        self.progress = self.out / "progress.jsonl"
        self.cells: list[CellResult] = []

    def _append(self, record: dict[str, Any]) -> None:
        with self.progress.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"time": round(time.time(), 3), **record}) + "\n")

    def item(self, cell: tuple[str, int, int], item: ItemResult, reused: bool) -> None:
        method, depth, width = cell
        if not reused:
            self._append({"event": "item", "method": method, "depth": depth, "width": width, **asdict(item)})
        if self.log is not None and not reused:  # items read back are summed up in the cell's line
            status = f"ERROR {item.error}" if item.error else ("correct" if item.correct else "wrong")
            self.log(f"{method} d={depth} w={width} {item.item_id}: {status} "
                     f"({item.calls} requests, {item.tokens} tokens, {item.seconds:.1f} s)")

    def cell(self, cell: CellResult) -> None:
        self.cells.append(cell)
        row = cell.row()
        self._append({"event": "cell", **row, "reused": cell.reused})
        write_results(self.cells, self.out, title=self.title, plots=False, meta=self.meta)
        if self.log is not None:
            self.log(f"cell {cell.method} d={cell.depth} w={cell.width}: acc={row['accuracy']} "
                     f"errors={cell.errors} requests/item={row['requests_per_item']} "
                     f"tokens/item={row['tokens_per_item']}"
                     + (f" ({cell.reused}/{cell.n} items from the store)" if cell.reused else ""))

    def finish(self, cells: Sequence[CellResult], *, plots: bool = True) -> dict[str, Path]:
        paths = write_results(cells, self.out, title=self.title, plots=plots, meta=self.meta)
        return {**paths, "progress": self.progress}


# ------------------------------------------------------------------------------- distillation data

def export_distill(cells: Sequence[CellResult], store: RunStore, out_dir: str | Path, *,
                   reviewer_model: str = "") -> dict[str, Path]:
    """Write what a stored grid produced as distillation data for ``moa distill``.

    ``traces.jsonl``: every proposal of every answered run, one per line, in the format
    :func:`veriforge.moa.distill.load_traces` reads (``question``, ``question_id`` = the run id,
    ``id``, ``response``, ``answer``) — each run is its own question group, so pairs are only ever
    formed between responses to the same question. ``judgements.jsonl``: every comparison the
    ReM-MoA Reviewer made, as :class:`~veriforge.moa.distill.JudgedPair` lines
    (:func:`~veriforge.moa.distill.read_judgements`), ``teacher`` = ``reviewer_model``.
    """
    from veriforge.moa.distill import JudgedPair, write_judgements

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    traces, judged = [], []
    seen: set[str] = set()
    for cell in cells:
        for item in cell.items:
            if item.run_id is None or item.run_id in seen:
                continue
            seen.add(item.run_id)
            info = store.get_run(item.run_id)
            if info is None:
                continue
            question = str(info.config.get("question", ""))
            memory = ReasoningMemory.load(store, item.run_id)
            for t in memory.proposals():
                traces.append({"question": question, "question_id": item.run_id, "id": t.id,
                               "response": t.reasoning, "answer": t.answer, "method": cell.method,
                               "layer": t.layer, "agent": t.agent, "model": t.model})
            for o in memory.outcomes:
                if o.a not in memory or o.b not in memory or o.meta.get("skipped"):
                    continue  # a skipped pair (known outcome) is no teacher verdict: never train or score on it
                judged.append(JudgedPair(question_id=item.run_id, question=question, a_id=o.a,
                                         response_a=memory[o.a].reasoning, b_id=o.b, response_b=memory[o.b].reasoning,
                                         verdict=o.winner, teacher=reviewer_model, consistent=o.consistent,
                                         failed=o.failed, reason=o.reason))
    traces_path = out / "traces.jsonl"
    _write_atomic(traces_path, "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in traces))
    return {"traces": traces_path, "judgements": write_judgements(out / "judgements.jsonl", judged)}
