"""The scaling runner: a depth × width grid for ReM-MoA and each baseline over a benchmark suite.

For every method and every (depth, width) cell, every item is answered by the engine, scored by
the benchmark's scorer (parse failures count as wrong and are reported) and its spend is read from
the run's own account. ``single`` has one cell (1, 1); ``self_consistency`` samples depth × width
times. The results are written as a table (CSV, JSON, Markdown) and plots (accuracy vs depth, vs
width, vs tokens) by :func:`write_results`.

Token numbers are what the back-ends billed; samples served from a request cache cost nothing, so
run grids with the cache off (the CLI does) when token curves matter.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.moa.config import METHODS, MoAConfig
from veriforge.moa.engine import MoAEngine, MoAResult
from veriforge.moa.errors import MoAConfigError
from veriforge.moa.extract import Extractor, default_extractor

__all__ = ["CellResult", "ItemResult", "grid_cells", "parse_int_range", "run_grid", "write_results"]

#: ``score(item, text) -> Score`` (``correct``, ``parsed``, ``parse_failed``); may be async.
ScoreFn = Callable[[Any, str], Any]


@dataclass
class ItemResult:
    """One item answered in one cell."""

    item_id: str
    answer: str | None
    correct: bool
    parse_failed: bool
    tokens: int
    cost_usd: float | None


@dataclass
class CellResult:
    """Accuracy and spend of one (method, depth, width) cell over the suite."""

    method: str
    depth: int
    width: int
    n: int
    correct: int
    parse_failures: int
    tokens_total: int
    cost_usd: float | None
    seconds: float
    items: list[ItemResult] = field(default_factory=list, repr=False)

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else math.nan

    @property
    def tokens_per_item(self) -> float:
        return self.tokens_total / self.n if self.n else math.nan

    def row(self) -> dict[str, Any]:
        return {"method": self.method, "depth": self.depth, "width": self.width, "n": self.n,
                "correct": self.correct, "accuracy": round(self.accuracy, 4),
                "parse_failures": self.parse_failures, "tokens_per_item": round(self.tokens_per_item, 1),
                "tokens_total": self.tokens_total, "cost_usd": self.cost_usd, "seconds": round(self.seconds, 2)}


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


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    out = fn(*args)
    return await out if isinstance(out, Awaitable) else out


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
) -> list[CellResult]:
    """Run every cell over ``items`` (``concurrency`` items at a time); results in cell order.

    ``engine_options`` go to :class:`MoAEngine` (``clients``, ``default_model``, ``settings``,
    ``store``); pass shared ``clients`` so connections are reused across cells.
    """
    options = dict(engine_options or {})
    results = []
    for method, depth, width in grid_cells(methods, depths, widths):
        config = base.replace(method=method, depth=depth, width=width)
        semaphore = asyncio.Semaphore(max(1, concurrency))
        started = time.monotonic()

        async def one(item: Any, config: MoAConfig = config, semaphore: asyncio.Semaphore = semaphore) -> ItemResult:
            async with semaphore:
                extractor = extractor_for(item) if extractor_for is not None else default_extractor
                engine = MoAEngine(config, extractor=extractor, **options)
                result: MoAResult = await engine.run(question_of(item))
                scored = await _call(score, item, result.text)
                return ItemResult(item_id=str(getattr(item, "id", "")), answer=result.answer,
                                  correct=bool(scored.correct), parse_failed=bool(scored.parse_failed),
                                  tokens=result.total_tokens, cost_usd=result.account.get("cost_usd"))

        scored_items = await asyncio.gather(*(one(item) for item in items))
        costs = [r.cost_usd for r in scored_items]
        cell = CellResult(method=method, depth=depth, width=width, n=len(scored_items),
                          correct=sum(r.correct for r in scored_items),
                          parse_failures=sum(r.parse_failed for r in scored_items),
                          tokens_total=sum(r.tokens for r in scored_items),
                          cost_usd=None if any(c is None for c in costs) else float(sum(c or 0.0 for c in costs)),
                          seconds=time.monotonic() - started, items=list(scored_items))
        results.append(cell)
        if on_cell is not None:
            on_cell(cell)
    return results


def _markdown(rows: list[dict[str, Any]], title: str) -> str:
    if not rows:
        return f"# {title}\n\n(no results)\n"
    cols = list(rows[0])
    lines = [f"# {title}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |")
    lines += ["", "Parse failures count as wrong. Tokens are billed tokens (cached samples cost nothing)."]
    return "\n".join(lines) + "\n"


def write_results(cells: Sequence[CellResult], out_dir: str | Path, *, title: str = "ReM-MoA scaling",
                  plots: bool = True, meta: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write ``results.csv``, ``results.json`` (rows + per-item answers), ``results.md`` and, with
    ``plots``, ``accuracy_vs_depth.png``, ``accuracy_vs_width.png``, ``accuracy_vs_tokens.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = [c.row() for c in cells]
    paths = {"csv": out / "results.csv", "json": out / "results.json", "markdown": out / "results.md"}
    with paths["csv"].open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["method"])
        writer.writeheader()
        writer.writerows(rows)
    detail = [{**c.row(), "items": [asdict(i) for i in c.items]} for c in cells]
    paths["json"].write_text(json.dumps({"title": title, "meta": meta or {}, "cells": detail}, indent=2),
                             encoding="utf-8")
    paths["markdown"].write_text(_markdown(rows, title), encoding="utf-8")
    if plots:
        from veriforge.moa.plots import plot_scaling

        paths.update(plot_scaling(cells, out, title=title))
    return paths
