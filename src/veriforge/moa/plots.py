"""Scaling plots: accuracy vs depth, vs width, and against cost — tokens and requests per item — one
line per method.

The cost plots are the honest ones: a method is only better if it is more accurate at the same
spend (docs/moa.md, "Scaling honesty", measures when self-consistency's few requests win).

matplotlib is imported here only (Agg back-end, no display needed), so the engine and the CLI's
``--help`` do not pay for it. ``single`` has one cell; it is drawn as a dashed horizontal line
in the depth and width plots and as a point in the cost plots. In the cost plots every cell is a
dot and each method's line joins its cells that no cheaper cell of the same method beats (its
accuracy-for-cost frontier), so a grid with several widths does not draw a zigzag.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veriforge.moa.errors import MoAError

if TYPE_CHECKING:
    from veriforge.moa.scaling import CellResult

__all__ = ["plot_scaling"]


def _pyplot():  # type: ignore[no-untyped-def]
    try:
        import matplotlib
    except ImportError as exc:
        raise MoAError("plots need matplotlib: pip install matplotlib (or install veriforge's plots extra)") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_scaling(cells: Sequence[CellResult], out_dir: str | Path, *, title: str = "") -> dict[str, Path]:
    """Write the four PNGs into ``out_dir``; returns their paths by name."""
    plt = _pyplot()
    out = Path(out_dir)
    methods = list(dict.fromkeys(c.method for c in cells))
    widths = sorted({c.width for c in cells if c.method != "single"}) or [1]
    depths = sorted({c.depth for c in cells if c.method != "single"}) or [1]
    ref_width, ref_depth = widths[-1], depths[-1]
    paths: dict[str, Path] = {}

    def finish(fig: Any, ax: Any, heading: str, name: str) -> None:
        """Accuracy axis, title, grid, legend; save as ``<name>.png`` and close."""
        ax.set_ylabel("accuracy")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(heading)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out / f"{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths[name] = path

    def axis(x_key: str, fixed_key: str, fixed: int, xlabel: str, name: str) -> None:
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for method in methods:
            if method == "single":
                single = next(c for c in cells if c.method == "single")
                ax.axhline(single.accuracy, linestyle="--", color="grey", label="single")
                continue
            pts = sorted((getattr(c, x_key), c.accuracy) for c in cells
                         if c.method == method and getattr(c, fixed_key) == fixed)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=method)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(xlabel)
        finish(fig, ax, f"{title} ({fixed_key} = {fixed})" if title else f"{fixed_key} = {fixed}", name)

    axis("depth", "width", ref_width, "depth (layers)", "accuracy_vs_depth")
    axis("width", "depth", ref_depth, "width (proposers per layer)", "accuracy_vs_width")

    def cost_axis(attr: str, xlabel: str, name: str) -> None:
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for method in methods:
            pts = sorted(((getattr(c, attr), c.accuracy) for c in cells if c.method == method),
                         key=lambda p: (p[0], -p[1]))
            # every cell as a dot; the line joins the cells no cheaper cell of the method beats
            frontier, best = [], -math.inf
            for x, acc in pts:
                if acc > best:
                    frontier.append((x, acc))
                    best = acc
            line = ax.plot([p[0] for p in frontier], [p[1] for p in frontier], marker="o",
                           linestyle="-" if len(frontier) > 1 else "", label=method)[0]
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, alpha=0.45, color=line.get_color())
        positive = all(getattr(c, attr) > 0 for c in cells)
        if positive:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel + (" (log scale)" if positive else ""))
        finish(fig, ax, title or f"accuracy vs {xlabel}", name)

    cost_axis("tokens_per_item", "billed tokens per item", "accuracy_vs_tokens")
    cost_axis("requests_per_item", "requests (LLM calls) per item", "accuracy_vs_requests")
    return paths
