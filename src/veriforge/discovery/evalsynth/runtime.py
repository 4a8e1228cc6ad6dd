"""Comparison routines that synthesized D3-Gym evaluators carry with them.

This module's *source text* is embedded verbatim into every deterministic evaluation script
(see :mod:`veriforge.discovery.evalsynth.codegen`), so a task's ``eval/`` script is
self-contained: it runs in the task's own environment, years later, without veriforge. Hence
the rules for this file: standard library only at module level; numpy and PIL are imported
inside the functions that need them (only array and image outputs need them, and a task that
writes ``.npy`` files or figures has them installed); no veriforge imports.

Every ``check_*`` function takes ``(pred_path, gold_path, params)`` and returns
``(passed, message)``; it never raises on a malformed prediction (a crash would be an
infrastructure failure, not a wrong answer) — :func:`check_output` turns any exception into a
failing verdict with the reason.
"""

import csv
import io
import json
import math
import os
import re

_NAN_TOKENS = {"", "nan", "NaN", "NAN", "na", "NA", "N/A", "null", "None", "none"}
_NUMBER_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|Infinity|infinity)$")


# ---------------------------------------------------------------------------------- numbers
def parse_number(text):
    """A float for a numeric cell, ``nan`` for an empty/NA cell, ``None`` when not numeric."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text)
    s = str(text).strip()
    if s in _NAN_TOKENS:
        return math.nan
    if _NUMBER_RE.match(s):
        return float(s)
    return None


def close(a, b, rtol, atol):
    """Tolerant float equality; NaN equals NaN, infinities must match exactly."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


# ---------------------------------------------------------------------------------- reading
def read_text(path):
    with open(path, "rb") as fh:
        data = fh.read()
    return data.decode("utf-8-sig", errors="replace")


def read_table(path, sep=None):
    """``(header, rows)`` of a CSV/TSV file; the delimiter comes from the gold plan."""
    text = read_text(path)
    if not text.strip():
        raise ValueError("file is empty")
    delimiter = sep or ","
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in r)]
    if not rows:
        raise ValueError("no rows")
    header = [h.strip() for h in rows[0]]
    return header, rows[1:]


def _norm_name(name):
    return str(name).strip().lower()


# ---------------------------------------------------------------------------------- tables
def _column_map(header, wanted):
    """Index of every wanted (gold) column in ``header``, matched by normalised name."""
    index = {}
    for i, h in enumerate(header):
        index.setdefault(_norm_name(h), i)
    found, missing = {}, []
    for name in wanted:
        i = index.get(_norm_name(name))
        if i is None:
            missing.append(name)
        else:
            found[name] = i
    return found, missing


def _project(rows, cmap, columns):
    out = []
    for r in rows:
        out.append([r[cmap[c]].strip() if cmap[c] < len(r) else "" for c in columns])
    return out


def _numeric_key(row, numeric_flags):
    """Exact (unrounded) order of a row's numeric cells; NaN and non-numbers last."""
    out = []
    for cell, numeric in zip(row, numeric_flags):  # noqa: B905
        if numeric:
            v = parse_number(cell)
            out.append((1, 0.0) if v is None or math.isnan(v) else (0, v))
    return tuple(out)


def _rows_equal(p, g, numeric_flags, rtol, atol):
    return all(_cells_equal(pc, gc, num, rtol, atol) for pc, gc, num in zip(p, g, numeric_flags))  # noqa: B905


def _align_unkeyed(p, g, numeric_flags, rtol, atol):
    """Pair prediction rows with gold rows without a key: ``(aligned pred rows, unmatched gold indices)``.

    Rounding values before sorting (the obvious canonical order) is fragile: 1e-6 noise moves a
    value across a rounding boundary and flips two rows, failing a correct answer. Instead rows are
    matched, not sorted: text cells must be equal (they form exact groups), numeric cells must be
    ``close`` with the evaluator's own ``rtol``/``atol``. Within a text group the candidate gold
    rows of a prediction row are those whose cell in the most discriminating numeric column (most
    distinct gold values) is within tolerance (found by bisection over the gold rows sorted on
    that cell, so large tables stay near n log n), and a
    maximum bipartite matching (augmenting paths) pairs them, so duplicates and near-ties can never
    block a correct answer the way a greedy first-fit could. Unmatched gold rows (a wrong value, a
    missing row) are returned for the error message; their slots hold the prediction row nearest to
    them so the cell comparison reports what differs.
    """
    import bisect

    num_idx = [i for i, f in enumerate(numeric_flags) if f]
    txt_idx = [i for i, f in enumerate(numeric_flags) if not f]
    groups = {}
    for gi, row in enumerate(g):
        groups.setdefault(tuple(row[i] for i in txt_idx), ([], []))[0].append(gi)
    for pi, row in enumerate(p):
        grp = groups.get(tuple(row[i] for i in txt_idx))
        if grp is not None:  # a row whose text cells match no gold row stays spare (reported below)
            grp[1].append(pi)
    # bisect on the most discriminating numeric column (most distinct gold values): a constant
    # first column would otherwise make every gold row a candidate of every predicted row
    first = max(num_idx, key=lambda i: len({r[i] for r in g})) if num_idx else None

    def sort_value(row):
        v = parse_number(row[first])
        return math.inf if v is None or math.isnan(v) else v

    match_g = {}  # gold index -> pred index
    for g_ids, p_ids in groups.values():
        ordered = sorted(g_ids, key=lambda i: sort_value(g[i])) if first is not None else list(g_ids)
        vals = [sort_value(g[i]) for i in ordered] if first is not None else None
        cand = {}
        for pi in p_ids:
            pv = sort_value(p[pi]) if vals is not None else None
            if pv is None or math.isinf(pv) or rtol >= 1:
                near = ordered
            else:
                # |pv - gv| <= atol + rtol*|gv| implies |pv - gv| <= (atol + rtol*|pv|) / (1 - rtol)
                slack = (atol + rtol * abs(pv)) / (1.0 - rtol)
                near = ordered[bisect.bisect_left(vals, pv - slack) : bisect.bisect_right(vals, pv + slack)]
            cand[pi] = [gi for gi in near if _rows_equal(p[pi], g[gi], numeric_flags, rtol, atol)]
        # augmenting-path matching (iterative, so thousands of duplicate rows cannot overflow the stack)
        match_p = {}
        for root in p_ids:
            if not cand[root]:
                continue
            parent = {}  # gold index -> pred index that reached it
            stack, seen_g, found = [root], set(), None
            while stack and found is None:
                pi = stack.pop()
                for gi in cand[pi]:
                    if gi in seen_g:
                        continue
                    seen_g.add(gi)
                    parent[gi] = pi
                    if gi not in match_g:
                        found = gi
                        break
                    stack.append(match_g[gi])
            while found is not None:  # flip the path
                pi = parent[found]
                prev = match_p.get(pi)
                match_g[found], match_p[pi] = pi, found
                found = prev
    used = set(match_g.values())
    spare = [pi for pi in range(len(p)) if pi not in used]
    unmatched = [gi for gi in range(len(g)) if gi not in match_g]
    for gi in unmatched:
        if not spare:
            break
        # the leftover prediction row that differs from this gold row in the fewest cells
        best = min(
            spare,
            key=lambda pi: sum(
                not _cells_equal(pc, gc, num, rtol, atol)
                for pc, gc, num in zip(p[pi], g[gi], numeric_flags)  # noqa: B905
            ),
        )
        match_g[gi] = best
        spare.remove(best)
    return [p[match_g[gi]] for gi in range(len(g))], unmatched


def _cells_equal(p, g, numeric, rtol, atol):
    if numeric:
        pv = parse_number(p)
        gv = parse_number(g)
        if pv is None or gv is None:
            return False
        return close(pv, gv, rtol, atol)
    return p == g


def check_table(pred_path, gold_path, params):
    """Column matching by name (order-insensitive), rows matched per the plan's ``row_order``.

    ``row_order`` is ``"ordered"`` (row i against row i), or ``"unordered"``: rows are aligned
    by the plan's ``key_columns`` when the gold has a unique key, else rows are matched one to one
    within tolerance (text cells equal, numeric cells ``close``; see :func:`_align_unkeyed`) -- an
    exact sort on unrounded values first, as a fast path for the common case.
    Numeric columns use ``rtol``/``atol``; text columns must match exactly (after stripping).
    """
    rtol, atol = float(params.get("rtol", 1e-4)), float(params.get("atol", 1e-8))
    sep = params.get("sep", ",")
    columns = list(params["columns"])
    numeric = dict(params.get("numeric", {}))
    drop = set(params.get("ignore_columns", []))
    g_header, g_rows = read_table(gold_path, sep)
    try:
        p_header, p_rows = read_table(pred_path, sep)
    except ValueError as exc:
        return False, f"prediction unreadable as a table: {exc}"
    g_map, _ = _column_map(g_header, columns)
    p_map, missing = _column_map(p_header, columns)
    if missing:
        return False, f"missing columns {missing}; prediction has {p_header}"
    extra = [h for h in p_header if _norm_name(h) not in {_norm_name(c) for c in columns} and h not in drop]
    extra = [h for h in extra if _norm_name(h) not in {_norm_name(d) for d in drop}]
    if extra and not params.get("extra_columns", True):
        return False, f"unexpected extra columns {extra}"
    if len(p_rows) != len(g_rows):
        return False, f"{len(p_rows)} rows, expected {len(g_rows)}"
    g = _project(g_rows, g_map, columns)
    p = _project(p_rows, p_map, columns)
    flags = [bool(numeric.get(c, False)) for c in columns]
    if params.get("row_order", "unordered") == "unordered":
        keys = list(params.get("key_columns") or [])
        if keys:
            kidx = [columns.index(k) for k in keys]
            by_key = {}
            for row in p:
                by_key.setdefault(tuple(row[i] for i in kidx), []).append(row)
            aligned = []
            for row in g:
                k = tuple(row[i] for i in kidx)
                cands = by_key.get(k)
                if not cands:
                    return False, f"no row with {dict(zip(keys, k))}"  # noqa: B905
                aligned.append(cands.pop(0))
            p = aligned
        else:
            # fast path: exact order on unrounded values; else tolerance-aware matching
            gs = sorted(g, key=lambda r: (tuple(c for c, f in zip(r, flags) if not f), _numeric_key(r, flags)))  # noqa: B905
            ps = sorted(p, key=lambda r: (tuple(c for c, f in zip(r, flags) if not f), _numeric_key(r, flags)))  # noqa: B905
            if all(_rows_equal(pr, gr, flags, rtol, atol) for pr, gr in zip(ps, gs)):  # noqa: B905
                g, p = gs, ps
            else:
                p, unmatched = _align_unkeyed(p, g, flags, rtol, atol)
                if unmatched:
                    g_rows_bad = len(unmatched)
                    first_bad = unmatched[0]
                    diffs = [
                        f"column {c!r}: got {pc!r}, expected {gc!r}"
                        for c, pc, gc, num in zip(columns, p[first_bad], g[first_bad], flags)  # noqa: B905
                        if not _cells_equal(pc, gc, num, rtol, atol)
                    ]
                    return False, (
                        f"{g_rows_bad} gold row(s) have no matching predicted row within tolerance "
                        f"(rtol={rtol}, atol={atol}); first: gold row {first_bad} {g[first_bad]}, nearest "
                        f"predicted row {p[first_bad]} differs in {'; '.join(diffs) or 'no cell'}"
                    )
    bad = 0
    first = None
    for i, (pr, gr) in enumerate(zip(p, g)):  # noqa: B905
        for c, pc, gc, num in zip(columns, pr, gr, flags):  # noqa: B905
            if not _cells_equal(pc, gc, num, rtol, atol):
                bad += 1
                if first is None:
                    first = f"row {i} column {c!r}: got {pc!r}, expected {gc!r}"
    if bad:
        return False, f"{bad} cell(s) differ beyond tolerance (rtol={rtol}, atol={atol}); first: {first}"
    return True, f"table matches: {len(g)} rows x {len(columns)} columns"


# ---------------------------------------------------------------------------------- JSON
def _json_diff(p, g, path, rtol, atol, extra_keys):
    if isinstance(g, bool) or isinstance(p, bool):
        return None if (type(p) is type(g) and p == g) else f"{path}: got {p!r}, expected {g!r}"
    if isinstance(g, (int, float)) or (g is None and isinstance(p, float)):
        gv = math.nan if g is None else float(g)
        if not isinstance(p, (int, float)) and p is not None:
            return f"{path}: got {type(p).__name__} {p!r}, expected number {g!r}"
        pv = math.nan if p is None else float(p)
        return None if close(pv, gv, rtol, atol) else f"{path}: got {p!r}, expected {g!r}"
    if isinstance(g, dict):
        if not isinstance(p, dict):
            return f"{path}: got {type(p).__name__}, expected object"
        missing = [k for k in g if k not in p]
        if missing:
            return f"{path}: missing keys {missing[:5]}"
        if not extra_keys:
            extra = [k for k in p if k not in g]
            if extra:
                return f"{path}: unexpected keys {extra[:5]}"
        for k in g:
            d = _json_diff(p[k], g[k], f"{path}.{k}", rtol, atol, extra_keys)
            if d:
                return d
        return None
    if isinstance(g, list):
        if not isinstance(p, list):
            return f"{path}: got {type(p).__name__}, expected list"
        if len(p) != len(g):
            return f"{path}: length {len(p)}, expected {len(g)}"
        for i, (pi, gi) in enumerate(zip(p, g)):  # noqa: B905
            d = _json_diff(pi, gi, f"{path}[{i}]", rtol, atol, extra_keys)
            if d:
                return d
        return None
    if isinstance(g, str) and isinstance(p, str):
        return None if p.strip() == g.strip() else f"{path}: got {p!r}, expected {g!r}"
    return None if p == g else f"{path}: got {p!r}, expected {g!r}"


def check_json(pred_path, gold_path, params):
    """Nested structure match: same keys (extra keys per plan), list order kept, numbers close."""
    rtol, atol = float(params.get("rtol", 1e-4)), float(params.get("atol", 1e-8))
    with open(gold_path, encoding="utf-8") as fh:
        gold = json.load(fh)
    text = read_text(pred_path)
    if not text.strip():
        return False, "prediction is empty"
    try:
        pred = json.loads(text)
    except ValueError as exc:
        return False, f"prediction is not valid JSON: {exc}"
    diff = _json_diff(pred, gold, "$", rtol, atol, bool(params.get("extra_keys", False)))
    return (False, diff) if diff else (True, "JSON matches")


# ---------------------------------------------------------------------------------- scalars & text
def check_scalar(pred_path, gold_path, params):
    """A text file holding exactly one number, compared with tolerance."""
    rtol, atol = float(params.get("rtol", 1e-4)), float(params.get("atol", 1e-8))
    gold = parse_number(read_text(gold_path).strip())
    text = read_text(pred_path).strip()
    if not text:
        return False, "prediction is empty"
    pred = parse_number(text)
    if pred is None:
        return False, f"prediction is not a single number: {text[:60]!r}"
    if not close(pred, gold, rtol, atol):
        return False, f"got {pred!r}, expected {gold!r} (rtol={rtol}, atol={atol})"
    return True, f"value {pred!r} matches {gold!r}"


_TOKEN_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|\w+|[^\w\s]")


def tokens(text):
    return _TOKEN_RE.findall(text)


def check_text(pred_path, gold_path, params):
    """Whitespace-insensitive token match (numbers within tolerance), or token-overlap F1.

    ``mode="exact"``: the token sequences must match one for one (case per ``ignore_case``).
    ``mode="overlap"``: bag-of-tokens F1 must reach ``min_f1`` (long free text).
    """
    rtol, atol = float(params.get("rtol", 1e-4)), float(params.get("atol", 1e-8))
    g_text = read_text(gold_path)
    p_text = read_text(pred_path)
    if not p_text.strip():
        return False, "prediction is empty"
    if params.get("ignore_case", False):
        g_text, p_text = g_text.lower(), p_text.lower()
    g_tok, p_tok = tokens(g_text), tokens(p_text)
    if params.get("mode", "exact") == "overlap":
        from collections import Counter

        gc, pc = Counter(g_tok), Counter(p_tok)
        common = sum((gc & pc).values())
        if not common:
            return False, "no tokens in common"
        prec, rec = common / sum(pc.values()), common / sum(gc.values())
        f1 = 2 * prec * rec / (prec + rec)
        ok = f1 >= float(params.get("min_f1", 0.9))
        return ok, f"token F1 {f1:.3f} (threshold {params.get('min_f1', 0.9)})"
    if len(g_tok) != len(p_tok):
        return False, f"{len(p_tok)} tokens, expected {len(g_tok)}"
    for i, (a, b) in enumerate(zip(p_tok, g_tok)):  # noqa: B905
        av, bv = parse_number(a), parse_number(b)
        if av is not None and bv is not None and not math.isnan(bv):
            if not close(av, bv, rtol, atol):
                return False, f"token {i}: got {a!r}, expected {b!r}"
        elif a != b:
            return False, f"token {i}: got {a!r}, expected {b!r}"
    return True, f"text matches ({len(g_tok)} tokens)"


# ---------------------------------------------------------------------------------- arrays
def _load_arrays(path):
    import numpy as np

    with open(path, "rb") as fh:
        head = fh.read(6)
    if head.startswith(b"PK"):
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    if head != b"\x93NUMPY":
        raise ValueError("not a NumPy .npy/.npz file")
    return {"": np.load(path, allow_pickle=False)}


def check_array(pred_path, gold_path, params):
    """Same array names, same shapes, numeric values ``allclose`` (NaN equal to NaN)."""
    import numpy as np

    rtol, atol = float(params.get("rtol", 1e-4)), float(params.get("atol", 1e-8))
    gold = _load_arrays(gold_path)
    try:
        pred = _load_arrays(pred_path)
    except Exception as exc:  # any unreadable prediction is a wrong answer
        return False, f"prediction unreadable as NumPy data: {type(exc).__name__}: {exc}"
    if sorted(pred) != sorted(gold):
        return False, f"arrays {sorted(pred)}, expected {sorted(gold)}"
    for name, g in gold.items():
        p = pred[name]
        label = name or "array"
        if p.shape != g.shape:
            return False, f"{label}: shape {p.shape}, expected {g.shape}"
        if g.dtype.kind in "biufc":
            if p.dtype.kind not in "biufc":
                return False, f"{label}: dtype {p.dtype}, expected numeric {g.dtype}"
            if not np.allclose(p, g, rtol=rtol, atol=atol, equal_nan=True):
                err = np.nanmax(np.abs(p.astype(complex) - g.astype(complex))) if g.size else 0.0
                return False, f"{label}: values differ (max abs error {float(err):.3g}, rtol={rtol})"
        elif not np.array_equal(p, g):
            return False, f"{label}: values differ"
    shapes = ", ".join((k or "array") + str(v.shape) for k, v in gold.items())
    return True, "arrays match: " + shapes


# ---------------------------------------------------------------------------------- images
def _gray(path):
    import numpy as np
    from PIL import Image

    with Image.open(path) as im:
        im.load()
        rgba = im.convert("RGBA")
    # Composite on white: transparent figure backgrounds must not read as black.
    bg = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    bg.alpha_composite(rgba)
    return np.asarray(bg.convert("L"), dtype=np.float64), rgba.size


def _box_mean(a, w):
    """Mean over every ``w``x``w`` window (valid positions), via an integral image."""
    import numpy as np

    s = np.pad(a, ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    return (s[w:, w:] - s[:-w, w:] - s[w:, :-w] + s[:-w, :-w]) / (w * w)


def ssim(x, y, window=7):
    """Mean structural similarity (Wang et al. 2004) of two grayscale images in [0, 255]."""
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    w = min(window, x.shape[0], x.shape[1])
    mx, my = _box_mean(x, w), _box_mean(y, w)
    vx = _box_mean(x * x, w) - mx * mx
    vy = _box_mean(y * y, w) - my * my
    cov = _box_mean(x * y, w) - mx * my
    s = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return float(s.mean())


def check_image(pred_path, gold_path, params):
    """Same size (within ``size_tolerance`` pixels per side) and SSIM at least ``min_ssim``."""
    from PIL import Image

    g, gsize = _gray(gold_path)
    try:
        p, psize = _gray(pred_path)
    except Exception as exc:  # any unreadable image is a wrong answer
        return False, f"prediction unreadable as an image: {type(exc).__name__}: {exc}"
    tol = int(params.get("size_tolerance", 2))
    if abs(psize[0] - gsize[0]) > tol or abs(psize[1] - gsize[1]) > tol:
        return False, f"size {psize}, expected {gsize} (±{tol} px)"
    if psize != gsize:
        import numpy as np

        p = np.asarray(Image.fromarray(p.astype("uint8")).resize(gsize), dtype=np.float64)
    score = ssim(p, g)
    threshold = float(params.get("min_ssim", 0.95))
    return score >= threshold, f"SSIM {score:.4f} (threshold {threshold})"


# ---------------------------------------------------------------------------------- dispatch
CHECKS = {
    "table": check_table,
    "json": check_json,
    "scalar": check_scalar,
    "text": check_text,
    "array": check_array,
    "image": check_image,
}


def check_output(entry, pred_dir, gold_dir, model_checks=None):
    """One output of the plan: missing/empty prediction fails; exceptions become failures."""
    rel = entry["path"]
    pred_path = os.path.join(pred_dir, rel)
    gold_path = os.path.join(gold_dir, rel)
    if not os.path.isfile(pred_path):
        return False, f"{rel}: missing from {pred_dir}"
    if os.path.getsize(pred_path) == 0:
        return False, f"{rel}: empty file"
    try:
        if entry["kind"] == "model":
            namespace = {"__name__": "model_check"}
            exec(compile(model_checks[entry["model_code"]], f"<model check {rel}>", "exec"), namespace)
            ok, msg = namespace["check"](pred_path, gold_path)
        else:
            ok, msg = CHECKS[entry["kind"]](pred_path, gold_path, entry.get("params", {}))
    except Exception as exc:  # a malformed prediction is a failing verdict
        return False, f"{rel}: could not evaluate: {type(exc).__name__}: {exc}"
    return bool(ok), f"{rel}: {msg}"


def evaluate_plan(plan, pred_dir, gold_dir, model_checks=None):
    """All outputs must pass; the message lists each output's verdict."""
    results = [check_output(e, pred_dir, gold_dir, model_checks) for e in plan["outputs"]]
    passed = all(ok for ok, _ in results)
    return passed, "; ".join(("PASS " if ok else "FAIL ") + msg for ok, msg in results)
