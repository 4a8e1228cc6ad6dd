"""The refinement report: one self-contained HTML file per run that shows how the episode went.

Sections (stable ids, so tests and users can link to them): ``summary`` (task, model, baseline,
reward shape, the best attempt), ``rewards`` (reward per turn as an inline SVG, colour = outcome),
``attempts`` (one row per turn: outcome, reward and its terms, speed-up with provenance), ``turns``
(per turn: the feedback the model got, the diff against the previous attempt, the code) and
``prompt`` (what the model was asked). No JavaScript, no network, no plotting library: the SVG is
written by hand so that rendering a report never imports matplotlib.
"""

from __future__ import annotations

import difflib
import html
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from veriforge.cudaperf.refine import RefineOutcome

__all__ = ["SECTIONS", "render_report", "reward_svg"]

SECTIONS = ("summary", "rewards", "attempts", "turns", "prompt")
COLOURS = {"correct": "#2e7d32", "wrong": "#ef6c00", "crash": "#c62828", "timeout": "#c62828",
           "compile_error": "#8e24aa", "cheat": "#000000"}
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
h1{font-size:1.5rem}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;font-size:.9rem}td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left}
th{background:#f5f5f5}pre{background:#f7f7f7;padding:.5rem;overflow-x:auto;font-size:.8rem}
.add{background:#e6ffec}.del{background:#ffebe9}.hunk{color:#6a737d}details{margin:.4rem 0}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _speed(a: Any) -> str:
    if a.speedup is None:
        return "–" if not a.correct else f"unknown ({a.provenance})"
    return f"{a.speedup:.3g}× ({a.provenance})"


def reward_svg(attempts: list[Any], *, width: int = 640, height: int = 220) -> str:
    """Reward per turn: a polyline with one dot per attempt coloured by outcome, the best-so-far
    as a dashed line, the zero line, and the turn numbers."""
    if not attempts:
        return "<p>No attempts.</p>"
    pad = 40
    values = [a.reward for a in attempts]
    lo, hi = min([*values, -1.0]), max([*values, 1.0])
    n = len(attempts)

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i / max(1, n - 1) if n > 1 else 0.5)

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * (v - lo) / (hi - lo)

    best, best_pts = float("-inf"), []
    for i, v in enumerate(values):
        best = max(best, v)
        best_pts.append(f"{x(i):.1f},{y(best):.1f}")
    pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="reward per turn">',
             f'<line x1="{pad}" x2="{width - pad}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#bbb"/>',
             f'<text x="4" y="{y(0) + 4:.1f}" font-size="11">0</text>',
             f'<text x="4" y="{y(hi) + 4:.1f}" font-size="11">{hi:.2g}</text>',
             f'<text x="4" y="{y(lo) + 4:.1f}" font-size="11">{lo:.2g}</text>',
             f'<polyline points="{" ".join(best_pts)}" fill="none" stroke="#90caf9" stroke-dasharray="4 3"/>',
             f'<polyline points="{pts}" fill="none" stroke="#1565c0" stroke-width="2"/>']
    for i, a in enumerate(attempts):
        colour = COLOURS.get(a.outcome, "#9e9e9e")
        parts.append(f'<circle cx="{x(i):.1f}" cy="{y(a.reward):.1f}" r="5" fill="{colour}">'
                     f'<title>turn {a.turn}: {_e(a.outcome)}, reward {a.reward:+.3f}</title></circle>')
        parts.append(f'<text x="{x(i) - 4:.1f}" y="{height - pad + 16}" font-size="11">{a.turn}</text>')
    parts.append(f'<text x="{width / 2 - 15:.0f}" y="{height - 6}" font-size="11">turn</text></svg>')
    return "".join(parts)


def _diff(prev: str, cur: str, a: str, b: str) -> str:
    lines = list(difflib.unified_diff(prev.splitlines(), cur.splitlines(), a, b, lineterm="", n=2))
    if not lines:
        return "<p>(identical code)</p>"
    out = []
    for line in lines[:400]:
        cls = "add" if line.startswith("+") and not line.startswith("+++") else \
            "del" if line.startswith("-") and not line.startswith("---") else "hunk" if line.startswith("@@") else ""
        out.append(f'<span class="{cls}">{_e(line)}</span>' if cls else _e(line))
    if len(lines) > 400:
        out.append(f"... {len(lines) - 400} more diff lines")
    return "<pre>" + "\n".join(out) + "</pre>"


def render_report(outcome: RefineOutcome) -> str:
    """The whole report as one HTML string."""
    best = outcome.best
    lang = "cuda" if outcome.family == "c2cuda" else "python"
    head = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>CudaPerf refine · {_e(outcome.task_id)} · {_e(outcome.run_id)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>CudaPerf refinement · {_e(outcome.task_id)}</h1>",
        "<section id='summary'><h2>Summary</h2><table>",
        f"<tr><th>run</th><td>{_e(outcome.run_id)}</td></tr>",
        f"<tr><th>task</th><td>{_e(outcome.task_id)} ({_e(outcome.family)})</td></tr>",
        f"<tr><th>model</th><td>{_e(outcome.model)}</td></tr>",
        f"<tr><th>back-end</th><td>{_e(outcome.backend)} (times "
        f"{'measured' if outcome.backend == 'gpu' else 'estimated by the cost model'})</td></tr>",
        f"<tr><th>baseline</th><td>{_e(outcome.baseline)}</td></tr>",
        f"<tr><th>reward</th><td>{_e(outcome.reward_config)}</td></tr>",
        f"<tr><th>turns</th><td>{len(outcome.attempts)}</td></tr>",
        f"<tr><th>best</th><td>turn {best.turn}: {_e(best.outcome)}, reward {best.reward:+.3f}, "
        f"speed-up {_e(_speed(best))}</td></tr>",
        "</table></section>",
        "<section id='rewards'><h2>Reward per turn</h2>", reward_svg(outcome.attempts),
        "<p>" + " · ".join(f"<span style='color:{c}'>●</span> {k.replace('_', ' ')}" for k, c in COLOURS.items())
        + " · dashed: best so far</p></section>",
        "<section id='attempts'><h2>Attempts</h2><table><tr><th>turn</th><th>outcome</th><th>reward</th>"
        "<th>terms</th><th>speed-up</th><th>reason</th></tr>",
    ]
    rows = []
    for a in outcome.attempts:
        terms = ", ".join(f"{k} {v:+.3f}" for k, v in a.terms.items())
        note = f" (= turn {a.repeat_of})" if a.repeat_of else ""
        colour = COLOURS.get(a.outcome, "#9e9e9e")
        rows.append(f"<tr><td>{a.turn}{note}</td><td style='color:{colour}'>{_e(a.outcome)}</td>"
                    f"<td>{a.reward:+.3f}</td><td>{_e(terms)}</td><td>{_e(_speed(a))}</td>"
                    f"<td>{_e(a.reason[:200])}</td></tr>")
    turns = ["</table></section><section id='turns'><h2>Turns</h2>"]
    prev = ""
    for a in outcome.attempts:
        turns.append(f"<h3 id='turn-{a.turn}'>Turn {a.turn}: {_e(a.outcome)} (reward {a.reward:+.3f})</h3>")
        last = " (after the last turn: recorded only)" if a.turn == len(outcome.attempts) else ""
        turns.append(f"<p>Feedback sent to the model{last}:</p>")
        turns.append(f"<pre>{_e(a.feedback)}</pre>")
        if a.turn > 1:
            turns.append(f"<details open><summary>Diff against turn {a.turn - 1}</summary>"
                         f"{_diff(prev, a.source, f'turn {a.turn - 1}', f'turn {a.turn}')}</details>")
        turns.append(f"<details><summary>Code ({lang}, {len(a.source.splitlines())} lines)</summary>"
                     f"<pre>{_e(a.source)}</pre></details>")
        turns.append(f"<details><summary>Full answer</summary><pre>{_e(a.completion)}</pre></details>")
        prev = a.source
    turns.append("</section><section id='prompt'><h2>Prompt</h2>")
    for m in outcome.prompt:
        turns.append(f"<h3>{_e(m['role'])}</h3><pre>{_e(m['content'])}</pre>")
    turns.append("</section></body></html>")
    return "\n".join(head + rows + turns)
