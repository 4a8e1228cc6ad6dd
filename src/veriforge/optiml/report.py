"""The OptiML-X HTML report: one self-contained file that tells how the kernel got faster.

Sections (ids are stable so tests and users can link to them): ``summary`` (start vs best,
provenance, verified configurations, the winner's estimate status with its worst-case and unknown
parts, and every verified candidate left without a score with the reason), ``progress``
(objective over evaluations with the best-so-far line), ``tree`` (the search tree as an inline
SVG, one layer per depth, colour = verdict), ``profile`` (before/after features table and a bar
chart of the proxy penalties), ``findings`` (the winner's diagnosis), ``edits`` (every edit with
evidence, effect and verdict) and ``diff`` (difflib's side-by-side HTML diff of the winner against
the start). Plots are matplotlib (Agg) PNGs embedded as base64, so the file opens anywhere without
network access.
"""

from __future__ import annotations

import base64
import difflib
import html
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from veriforge.optiml.xsearch import OptimizeResult

__all__ = ["SECTIONS", "render_report", "tree_svg", "write_outputs"]

SECTIONS = ("summary", "progress", "tree", "profile", "findings", "edits", "diff")
_COLOURS = {"accepted": "#2e7d32", "rejected": "#c62828", "pending": "#9e9e9e", "unscored": "#ef6c00"}
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;color:#222}
h1{font-size:1.6rem}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;font-size:.9rem}td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left}
th{background:#f5f5f5}.ok{color:#2e7d32}.bad{color:#c62828}.unscored{color:#ef6c00}
code{background:#f5f5f5;padding:0 .2rem}
table.diff{font-family:monospace;font-size:.8rem}.diff_add{background:#e6ffec}.diff_chg{background:#fff5b1}
.diff_sub{background:#ffebe9}img{max-width:100%}
"""


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def progress_plot(history: list[dict[str, Any]], unit: str) -> str:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    xs = [h["evaluations"] for h in history]
    ax.scatter([h["evaluations"] for h in history if h["quantity"] is not None],
               [h["quantity"] for h in history if h["quantity"] is not None], s=14, c="#1565c0",
               label="candidate (accepted)")
    best = [h["best"] for h in history]
    ax.step(xs, best, where="post", color="#2e7d32", label="best so far")
    ax.set_xlabel("evaluations")
    ax.set_ylabel(f"objective ({unit})")
    ax.set_yscale("log")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    return _png(fig)


def penalties_plot(start: dict[str, float], best: dict[str, float]) -> str:
    plt = _plt()
    names = sorted(set(start) | set(best)) or ["(none)"]
    fig, ax = plt.subplots(figsize=(7, 2.8))
    idx = range(len(names))
    ax.bar([i - 0.2 for i in idx], [start.get(n, 0.0) for n in names], width=0.4, label="start", color="#9e9e9e")
    ax.bar([i + 0.2 for i in idx], [best.get(n, 0.0) for n in names], width=0.4, label="best", color="#2e7d32")
    ax.set_xticks(list(idx), names)
    ax.set_ylabel("penalty (0 = ideal)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    return _png(fig)


def tree_svg(nodes: list[dict[str, Any]], best_id: int | None, width: int = 1100) -> str:
    """A layered drawing of the tree: one row per depth, edges to parents, colour = verdict."""
    layers: dict[int, list[dict[str, Any]]] = {}
    for n in nodes:
        layers.setdefault(int(n.get("depth", 0)), []).append(n)
    row_h, r = 70, 9
    height = row_h * (max(layers, default=0) + 1) + 40
    pos: dict[int, tuple[float, float]] = {}
    for depth, row in layers.items():
        for i, n in enumerate(row):
            pos[n["id"]] = ((i + 1) * width / (len(row) + 1), 25 + depth * row_h)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="search tree">']
    for n in nodes:
        if n.get("parent") is not None and n["parent"] in pos:
            (x1, y1), (x2, y2) = pos[n["parent"]], pos[n["id"]]
            parts.append(f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" stroke="#bbb"/>')
    for n in nodes:
        x, y = pos[n["id"]]
        colour = _COLOURS.get("unscored" if _unscored(n) else n.get("status", ""), "#9e9e9e")
        edit = (n.get("edit") or {}).get("description") or "start"
        eff = (n.get("effect") or {}).get("relative_change")
        eff_text = f" ({eff:+.1%})" if isinstance(eff, float) else ""
        title = html.escape(f"#{n['id']} {edit}{eff_text} — {n.get('status')} {n.get('reason') or ''}")
        stroke = ' stroke="#000" stroke-width="3"' if n["id"] == best_id else ""
        parts.append(f'<circle cx="{x:.0f}" cy="{y:.0f}" r="{r}" fill="{colour}"{stroke}><title>{title}</title>'
                     f'</circle><text x="{x:.0f}" y="{y + 22:.0f}" font-size="9" text-anchor="middle">'
                     f'{n["id"]}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _fmt_time(t: float | None) -> str:
    if t is None:
        return "–"
    return f"{t * 1e6:.2f} µs" if t < 1e-3 else f"{t * 1e3:.3f} ms"


def render_report(result: OptimizeResult) -> str:
    """The whole report as one HTML string."""
    tree = result.tree_json()
    nodes = tree.get("nodes", [])
    start, best = result.start, result.best
    sd, bd = start.evaluation.details, best.evaluation.details
    prov = result.settings.provenance
    esc = html.escape
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>OptiML-X report: {esc(result.spec.id)}"
           f"</title><style>{_CSS}</style></head><body>"]
    out.append(f"<h1>OptiML-X: {esc(result.spec.id)}</h1><p>{esc(result.spec.title)}</p>")
    stats = result.search.stats
    label = time_label(prov, result.settings.backend, result.settings.gpu)
    out.append("<section id='summary'><h2>Summary</h2><table>")
    rows = [
        ("start", esc(result.start_label)),
        ("algorithm", f"{esc(result.search.algorithm)} · seed {result.settings.seed}"),
        ("time provenance", f"<b>{esc(prov)}</b> (back-end {esc(result.settings.backend)}, "
                            f"GPU model {esc(result.settings.gpu)}) — never mixed within this search"),
        ("problem sizes (every time and estimate is for these)", esc(sizes_line(result.spec))),
        (f"start time ({esc(label)}, geomean over configs)", _fmt_time(result.start_time)),
        (f"best time ({esc(label)}, geomean over configs)", _fmt_time(result.best_time)),
        ("speedup", f"<b>{result.speedup:.2f}×</b>"),
        ("objective start → best", f"{start.evaluation.objective:.4g} → {best.evaluation.objective:.4g}"),
        ("verified configs (best)", esc(", ".join(bd.get("verified_configs") or []))),
        ("estimate (best)", _estimate_html(bd.get("estimate"), prov)),
        ("verified without a score", _unscored_html(nodes)),
        ("ran out of CPU emulation time", esc(emulation_line(nodes))),
        ("held-out sizes (never shown to a proposer)", esc(heldout_line(result.heldout))),
        ("model calls", _model_calls_html(result.model_calls())),
        ("proposals dropped before evaluation", _skips_html(result.proposer_skips, result.proposer_calls)),
        ("evaluations", f"{stats.unique_evaluations} unique ({stats.accepted} accepted, {stats.rejected} "
                        f"rejected), {stats.remeasured} re-measured, stop: {esc(stats.stop_reason)}"),
        ("edits to the winner", esc(" → ".join(_path(best)) or "none (the start is best)")),
    ]
    out += [f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows]
    out.append("</table></section>")
    out.append(f"<section id='progress'><h2>Objective over evaluations</h2>"
               f"<img alt='objective over evaluations' src='{progress_plot(result.search.history, 's')}'>"
               "</section>")
    out.append("<section id='tree'><h2>Search tree</h2><p>Green: accepted, red: rejected, orange: verified "
               "but without a score (a configuration's time unknown); the winner is outlined; hover a node "
               "for its edit and effect.</p>"
               f"{tree_svg(nodes, best.id)}</section>")
    out.append("<section id='profile'><h2>Profile: before and after</h2><table><tr><th>feature</th>"
               "<th>start</th><th>best</th></tr>")
    sf, bf = sd.get("features") or {}, bd.get("features") or {}
    for name in sorted(set(sf) | set(bf)):
        out.append(f"<tr><td><code>{esc(name)}</code></td><td>{_num(sf.get(name))}</td>"
                   f"<td>{_num(bf.get(name))}</td></tr>")
    for cfg in sorted(set(sd.get("config_times") or {}) | set(bd.get("config_times") or {})):
        out.append(f"<tr><td>time_s [{esc(cfg)}] ({esc(label)}; {esc(_config_sizes(result.spec, cfg))})</td>"
                   f"<td>{_fmt_time((sd.get('config_times') or {}).get(cfg))}</td>"
                   f"<td>{_fmt_time((bd.get('config_times') or {}).get(cfg))}</td></tr>")
    out.append("</table>")
    chart = penalties_plot(sd.get("penalties") or {}, bd.get("penalties") or {})
    out.append(f"<img alt='bottleneck proxies' src='{chart}'>")
    out.append("</section>")
    out.append("<section id='findings'><h2>Bottleneck diagnosis</h2><table><tr><th></th><th>start</th>"
               "<th>best</th></tr>")
    out.append(f"<tr><td>findings</td><td>{_findings_html(sd)}</td><td>{_findings_html(bd)}</td></tr></table>"
               "</section>")
    out.append("<section id='edits'><h2>Edits</h2><table><tr><th>#</th><th>parent</th><th>proposer</th>"
               "<th>edit</th><th>evidence</th><th>verdict</th><th>effect</th></tr>")
    for n in nodes:
        edit = n.get("edit") or {}
        eff = (n.get("effect") or {}).get("relative_change")
        ev_text = _evidence_text(edit.get("evidence"))
        why = _unscored(n)
        slow = ((n.get("evaluation") or {}).get("details") or {}).get("emulation_limit")
        cls = "ok" if n.get("status") == "accepted" else ("unscored" if why or slow else "bad")
        verdict = (f"verified, no score — {why}" if why
                   else n.get("status", "") + (f": {n.get('reason')}" if n.get("reason") else ""))
        out.append(f"<tr><td>{n['id']}</td><td>{'' if n.get('parent') is None else n['parent']}</td>"
                   f"<td>{esc(edit.get('proposer') or '')}</td><td>{esc(edit.get('description') or 'start')}</td>"
                   f"<td>{esc(ev_text)}</td><td class='{cls}'>{esc(verdict[:300])}</td>"
                   f"<td>{'' if eff is None else f'{eff:+.1%}'}</td></tr>")
    out.append("</table></section>")
    diff = difflib.HtmlDiff(wrapcolumn=80).make_table(
        start.state.source.splitlines(), best.state.source.splitlines(), "start", "best", context=True, numlines=3)
    out.append(f"<section id='diff'><h2>Source diff: winner vs start</h2>{diff}</section>")
    out.append("</body></html>")
    return "\n".join(out)


def time_label(provenance: str, backend: str, gpu: str) -> str:
    """Where the report's times come from and for which hardware: an estimate is for a GPU model,
    an emulated time is CPU wall time (never comparable with a GPU's), a measured one is a GPU's."""
    if provenance == "estimated":
        return f"estimated for {gpu} by the cost model"
    if provenance == "emulated":
        return "emulated on this machine's CPU, not a GPU time"
    return f"{provenance} on the {backend} back-end"


def _config_sizes(spec: Any, config: str) -> str:
    for c in (*spec.configs, *getattr(spec, "timing", ())):
        if c.name == config:
            return ", ".join(f"{k}={v}" for k, v in c.variables.items()) or "no size variables"
    return "sizes unknown"


def sizes_line(spec: Any) -> str:
    """``small: n=100; odd: n=1029``: each configuration's problem size (tiny sizes are dominated
    by launch overhead, so a time or a speedup means little without them)."""
    return "; ".join(f"{c.name}: {_config_sizes(spec, c.name)}" for c in (*spec.configs, *getattr(spec, "timing", ())))


def skips_line(skips: list[dict[str, Any]], calls: dict[str, int]) -> str:
    """Model calls and what was dropped without a node (failed calls, malformed replies, no-op edits)."""
    if not calls and not skips:
        return ""
    failed = sum(1 for s in skips if s.get("kind") == "call_failed")
    made = ", ".join(f"{n}: {c} call(s)" for n, c in calls.items())
    return f"{made}; {failed} failed; {len(skips) - failed} reply part(s) dropped"


def model_calls_line(calls: dict[str, Any]) -> str:
    """"12 made, 12 failed (first: ...)" for the summary and report; "" without a model."""
    if not calls.get("calls"):
        return ""
    text = f"{calls['calls']} made, {calls['failed']} failed"
    if calls.get("all_failed"):
        text += " — EVERY model call failed: only the built-in operators searched"
    if calls.get("first_error"):
        text += f" (first: {calls['first_error'][:200]})"
    return text


def _model_calls_html(calls: dict[str, Any]) -> str:
    line = model_calls_line(calls)
    if not line:
        return "none (no model proposer)"
    return f"<b class='bad'>{html.escape(line)}</b>" if calls.get("failed") else html.escape(line)


def _skips_html(skips: list[dict[str, Any]], calls: dict[str, int]) -> str:
    head = skips_line(skips, calls)
    if not head:
        return "none (no model proposer)"
    items = "".join(f"<li>node {html.escape(str(s.get('node')))} · {html.escape(str(s.get('proposer')))}: "
                    f"{html.escape(str(s.get('reason')))}</li>" for s in skips[:200])
    more = f"<li>… {len(skips) - 200} more in tree.json</li>" if len(skips) > 200 else ""
    return f"{html.escape(head)}<ul>{items}{more}</ul>" if skips else html.escape(head)


def heldout_line(heldout: dict[str, Any] | None) -> str:
    """One line on the final held-out check (terminal summary and report)."""
    if heldout is None:
        return "off"
    configs = heldout.get("configs") or []
    if not configs:
        return heldout.get("note") or "none"
    sizes = "; ".join(", ".join(f"{k}={v}" for k, v in c.items() if k != "name") for c in configs)
    checks = heldout.get("checks") or {}
    failed = sum(1 for c in checks.values() if not c.get("passed"))
    verdict = (f"{len(checks)} finalist(s) checked, {failed} rejected there" if checks
               else "the start is best: nothing to check")
    dropped = len(heldout.get("dropped") or {})
    return f"{sizes} — {verdict}" + (f"; {dropped} generated size(s) outside the task dropped" if dropped else "")


def emulation_line(nodes: list[dict[str, Any]]) -> str:
    """How many kernels the CPU runtime could not finish in time: unverified, not wrong."""
    slow = [n for n in nodes if ((n.get("evaluation") or {}).get("details") or {}).get("emulation_limit")]
    if not slow:
        return "none"
    return (f"{len(slow)} kernel(s) (#{', #'.join(str(n['id']) for n in slow[:8])}): not verified and not known "
            f"to be wrong — the CPU runtime is 10-1000x slower than a GPU; give smaller sizes or use a GPU")


def _unscored(node: dict[str, Any]) -> str | None:
    """The reason a verified node has no score (tree.json's ``score.unscored_reason``)."""
    return ((node.get("score") or {}).get("unscored_reason")
            or ((node.get("evaluation") or {}).get("details") or {}).get("unscored_reason"))


def _estimate_html(estimate: dict[str, Any] | None, provenance: str) -> str:
    """The best candidate's estimate: status, and any worst-case or unknown parts per configuration."""
    if provenance != "estimated":
        return f"– ({html.escape(provenance)} times)"
    if not estimate:
        return "–"
    esc = html.escape
    status = str(estimate.get("status") or "?")
    gloss = {"exact": "every part counted and resolved",
             "upper_bound": "every part counted; some priced at their worst case (an upper bound)",
             "unknown": "some work could not be counted"}.get(status, "")
    parts = [f"<b>{esc(status)}</b> ({esc(gloss)}), {esc(str(estimate.get('model') or ''))} on "
             f"{esc(str(estimate.get('gpu') or ''))}"]
    items = []
    for name, rec in (estimate.get("configs") or {}).items():
        for kind in ("unknown", "worst_case"):
            for what in rec.get(kind) or []:
                items.append(f"<li>[{esc(name)}] {'worst case' if kind == 'worst_case' else 'unknown'}: "
                             f"{esc(str(what))}</li>")
    if items:
        parts.append("<ul>" + "".join(items[:20]) + ("<li>…</li>" if len(items) > 20 else "") + "</ul>")
    return "".join(parts)


def _unscored_html(nodes: list[dict[str, Any]]) -> str:
    rows = [(n["id"], why) for n in nodes if (why := _unscored(n))]
    if not rows:
        return "none"
    return (f"{len(rows)} (ranked after every scored candidate)<ul>"
            + "".join(f"<li>#{i}: {html.escape(why[:400])}</li>" for i, why in rows[:10])
            + ("<li>…</li>" if len(rows) > 10 else "") + "</ul>")


def _path(node: Any) -> list[str]:
    steps = []
    while node is not None and node.parent is not None:
        steps.append((node.edit or {}).get("description", "?"))
        node = node.parent
    return list(reversed(steps))


def _num(v: Any) -> str:
    if v is None:
        return "–"
    return f"{v:.4g}" if isinstance(v, float) else html.escape(str(v))


def _findings_html(details: dict[str, Any]) -> str:
    items = details.get("findings") or []
    if not items:
        return "none"
    return "<ul>" + "".join(f"<li>[{html.escape(str(f.get('level', '')))}] {html.escape(f['message'])}</li>"
                            for f in items[:8]) + "</ul>"


def _evidence_text(evidence: Any) -> str:
    if not isinstance(evidence, dict):
        return "" if evidence is None else str(evidence)
    msgs = [f.get("message", "") for f in evidence.get("findings") or []]
    rest = {k: v for k, v in evidence.items() if k != "findings"}
    return "; ".join([str(rest), *msgs]) if rest or msgs else ""


def write_outputs(result: OptimizeResult, out_dir: str | Path) -> dict[str, Path]:
    """best.cu, tree.json and report.html in ``out_dir`` (created); returns their paths."""
    import json

    from veriforge.optiml.tidy import tidy_best

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"kernel": out / "best.cu", "tree": out / "tree.json", "report": out / "report.html"}
    # what the edits left behind (the start's performance comments, orphaned host variables) goes;
    # the code the evaluator verified is otherwise unchanged (optiml/tidy.py)
    paths["kernel"].write_text(tidy_best(result.start.state.source, result.best.state.source))
    paths["tree"].write_text(json.dumps(result.tree_json(), indent=1, default=str))
    paths["report"].write_text(render_report(result))
    return paths
