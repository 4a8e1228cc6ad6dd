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


_XLSX_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_XLSX_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def _xlsx_column(ref):
    """0-based column of a cell reference (``"C7"`` -> 2)."""
    n = 0
    for ch in ref:
        if not ch.isalpha():
            break
        n = n * 26 + (ord(ch.upper()) - 64)
    return n - 1


def xlsx_sheets(path):
    """``[(sheet name, rows of cell strings)]`` of an Excel ``.xlsx`` workbook, read with the
    standard library (an ``.xlsx`` is a zip of XML parts), so an evaluator needs no openpyxl.
    Numbers keep the text Excel stored (what ``to_excel`` wrote); formulas give their cached value."""
    import xml.etree.ElementTree as ET
    import zipfile

    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        shared = []
        if "xl/sharedStrings.xml" in names:
            for si in ET.fromstring(zf.read("xl/sharedStrings.xml")).iter(_XLSX_NS + "si"):
                shared.append("".join(t.text or "" for t in si.iter(_XLSX_NS + "t")))
        rels = {}
        if "xl/_rels/workbook.xml.rels" in names:
            for rel in ET.fromstring(zf.read("xl/_rels/workbook.xml.rels")):
                target = rel.get("Target", "").lstrip("/")
                rels[rel.get("Id")] = target[3:] if target.startswith("xl/") else target
        out = []
        for i, sheet in enumerate(ET.fromstring(zf.read("xl/workbook.xml")).iter(_XLSX_NS + "sheet")):
            target = "xl/" + rels.get(sheet.get(_XLSX_REL), f"worksheets/sheet{i + 1}.xml")
            rows = []
            for row in ET.fromstring(zf.read(target)).iter(_XLSX_NS + "row"):
                cells = {}
                for c in row.iter(_XLSX_NS + "c"):
                    kind, v = c.get("t"), c.find(_XLSX_NS + "v")
                    if kind == "inlineStr":
                        text = "".join(t.text or "" for t in c.iter(_XLSX_NS + "t"))
                    elif v is None or v.text is None:
                        text = ""
                    elif kind == "s":
                        text = shared[int(v.text)]
                    elif kind == "b":
                        text = "True" if v.text == "1" else "False"
                    else:
                        text = v.text
                    cells[_xlsx_column(c.get("r", "")) if c.get("r") else len(cells)] = text
                if cells:
                    rows.append([cells.get(j, "") for j in range(max(cells) + 1)])
            out.append((sheet.get("name", f"Sheet{i + 1}"), rows))
    return out


def read_table(path, sep=None):
    """``(header, rows)`` of a CSV/TSV file (the delimiter comes from the gold plan), or of the
    only sheet of an ``.xlsx`` workbook."""
    if str(path).lower().endswith(".xlsx"):
        sheets = xlsx_sheets(path)
        if len(sheets) != 1:
            raise ValueError(f"workbook has {len(sheets)} sheets, expected 1")
        rows = [r for r in sheets[0][1] if any(c.strip() for c in r)]
        if not rows:
            raise ValueError("no rows")
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        return [h.strip() for h in rows[0]], rows[1:]
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


# ---------------------------------------------------------------------------------- figures
# A figure is judged by the data its axes plot, recorded at savefig time by the plot recorder
# (``.plotdata/<figure>.json`` in each results folder). Style never matters: colours, markers,
# widths, figure size and dpi are not even recorded. SSIM is reported as a secondary number.
_FIG_KINDS = {
    "xy": "line/scatter",
    "bar": "bar",
    "errorbar": "error-bar",
    "area": "filled-area",
    "grid": "image/heatmap",
}


def _fv(v):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _allclose(p, g, rtol, atol):
    if len(p) != len(g):
        return False
    return all(close(_fv(a), _fv(b), rtol, atol) for a, b in zip(p, g))  # noqa: B905


def _tick_map(ticks):
    """Position -> category for the *text* tick labels of an axis (numeric labels are not
    categories: where numeric ticks fall depends on the figure's size)."""
    labels = {}
    for loc, text in ticks or []:
        t = str(text).strip().replace("\u2212", "-")
        if t and parse_number(t) is None:
            labels[round(_fv(loc), 6)] = t.lower()
    return labels


def _bar_items(s, ticks):
    """``[(category, base, value)]``: category is the tick label at the bar's centre, if any."""
    labels = _tick_map(ticks)
    items = []
    horizontal = s.get("orientation") == "horizontal"
    for x, y, w, h in s.get("bars") or []:
        x, y, w, h = _fv(x), _fv(y), _fv(w), _fv(h)
        centre, base, value = (y + h / 2, x, w) if horizontal else (x + w / 2, y, h)
        items.append((labels.get(round(centre, 6)), centre, base, value))
    return items


def _compare_bars(ps, gs, p_ax, g_ax, rtol, atol):
    key = "yticks" if gs.get("orientation") == "horizontal" else "xticks"
    gi = _bar_items(gs, g_ax.get(key))
    pi = _bar_items(ps, p_ax.get(key))
    if len(pi) != len(gi):
        g_cats = [c for c, *_ in gi if c is not None]
        p_cats = {c for c, *_ in pi if c is not None}
        lost = [c for c in g_cats if c not in p_cats]
        return f"{len(pi)} bars, expected {len(gi)}" + (f" (missing categories {lost[:5]})" if lost else "")
    g_cats = [c for c, *_ in gi]
    p_cats = [c for c, *_ in pi]
    by_category = None not in g_cats and len(set(g_cats)) == len(g_cats) and sorted(g_cats) == sorted(p_cats)
    if by_category:
        pmap = {c: (b, v) for c, _, b, v in pi}
        pairs = [(c, pmap[c], (b, v)) for c, _, b, v in gi]
    else:
        if None not in g_cats and None not in p_cats and len(set(g_cats)) == len(g_cats) and set(g_cats) != set(p_cats):
            lost = [c for c in g_cats if c not in set(p_cats)]
            return f"categories {sorted(set(p_cats))[:8]}, expected {sorted(set(g_cats))[:8]} (missing {lost[:5]})"
        gi_s, pi_s = sorted(gi, key=lambda t: t[1]), sorted(pi, key=lambda t: t[1])
        pairs = []
        for p, g in zip(pi_s, gi_s):  # noqa: B905
            name = g[0] if g[0] is not None else f"bar at {g[1]:.4g}"
            pairs.append((name, (p[2], p[3]), (g[2], g[3])))
    for cat, (pb, pv), (gb, gv) in pairs:
        if not close(pv, gv, rtol, atol):
            return f"bar {cat!r}: value {pv:.6g}, expected {gv:.6g}"
        if not close(pb, gb, rtol, atol):
            return f"bar {cat!r}: starts at {pb:.6g}, expected {gb:.6g}"
    return None


def _points(xs, ys):
    pts = zip(map(_fv, xs), map(_fv, ys))  # noqa: B905
    return sorted(pts, key=lambda t: (math.isnan(t[0]), t[0], math.isnan(t[1]), t[1]))


def _extras(s, fields):
    """Per-point values beyond x/y that carry data: z (3-D), a numeric marker colour (c) and
    marker sizes (s, compared up to a common scale: a size map's scale is style)."""
    out = []
    for f in fields:
        vals = [_fv(v) for v in s.get(f) or []]
        if f == "s" and vals:
            top = max((abs(v) for v in vals if v == v), default=0.0) or 1.0
            vals = [v / top for v in vals]
        out.append(vals)
    return out


def _compare_xy(ps, gs, p_ax, g_ax, rtol, atol):
    gx, gy, px, py = gs.get("x", []), gs.get("y", []), ps.get("x", []), ps.get("y", [])
    if len(px) != len(gx):
        return f"{len(px)} points, expected {len(gx)}"
    names = {"z": "z values", "c": "marker colour values", "s": "marker sizes"}
    fields = [f for f in ("z", "c", "s") if gs.get(f)]
    for f in fields:
        if len(ps.get(f) or []) != len(gx):
            return f"the {names[f]} are missing (the gold maps data onto them)"
    gext, pext = _extras(gs, fields), _extras(ps, fields)
    if (
        _allclose(px, gx, rtol, atol)
        and _allclose(py, gy, rtol, atol)
        and all(_allclose(a, b, rtol, atol) for a, b in zip(pext, gext))  # noqa: B905
    ):
        return None
    gmap, pmap = _tick_map(g_ax.get("xticks")), _tick_map(p_ax.get("xticks"))
    gcat = [gmap.get(round(_fv(v), 6)) for v in gx]
    pcat = [pmap.get(round(_fv(v), 6)) for v in px]
    if None not in gcat and None not in pcat:
        # points at categories (a categorical x axis): compare category by category
        if sorted(set(pcat)) != sorted(set(gcat)):
            return f"categories {sorted(set(pcat))[:8]}, expected {sorted(set(gcat))[:8]}"
        gpts = sorted(zip(gcat, *_value_columns(gy, gext)), key=_nan_last)  # noqa: B905
        ppts = sorted(zip(pcat, *_value_columns(py, pext)), key=_nan_last)  # noqa: B905
        for p, g in zip(ppts, gpts):  # noqa: B905
            if p[0] != g[0] or not _allclose(p[1:], g[1:], rtol, atol):
                if p[0] != g[0]:
                    n_p, n_g = pcat.count(g[0]), gcat.count(g[0])
                    return f"{n_p} points at {g[0]!r}, expected {n_g}"
                return f"point at {g[0]!r}: {_fv(p[1]):.6g}, expected {_fv(g[1]):.6g}"
        return None
    # Scatter points may be drawn in any order: compare them as a set.
    gp = sorted(zip(map(_fv, gx), *_value_columns(gy, gext)), key=_nan_last)  # noqa: B905
    pp = sorted(zip(map(_fv, px), *_value_columns(py, pext)), key=_nan_last)  # noqa: B905
    for p, g in zip(pp, gp):  # noqa: B905
        if not _allclose(p, g, rtol, atol):
            if len(g) > 2 and _allclose(p[:2], g[:2], rtol, atol):
                return f"point ({g[0]:.6g}, {g[1]:.6g}): other {' / '.join(names[f] for f in fields)} than expected"
            return f"point ({p[0]:.6g}, {p[1]:.6g}), expected ({g[0]:.6g}, {g[1]:.6g})"
    return None


def _value_columns(ys, extras):
    return [[_fv(v) for v in ys], *extras]


def _nan_last(t):
    """Sort key for point tuples: NaN sorts after every number (so both sides order alike)."""
    return tuple((1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v) for v in t)


def _compare_series(kind, ps, gs, p_ax, g_ax, rtol, atol):
    """``None`` when the series carry the same data, else why not."""
    if kind == "xy":
        return _compare_xy(ps, gs, p_ax, g_ax, rtol, atol)
    if kind == "bar":
        return _compare_bars(ps, gs, p_ax, g_ax, rtol, atol)
    if kind == "errorbar":

        def norm(segs, ax):
            # An interval drawn at a category (a text tick) belongs to that category, wherever
            # the category is placed; others are compared by their coordinates.
            xl, yl = _tick_map(ax.get("xticks")), _tick_map(ax.get("yticks"))
            out = []
            for s in segs:
                a, b = (_fv(s[0]), _fv(s[1])), (_fv(s[2]), _fv(s[3]))
                lo, hi = min(a, b), max(a, b)
                if lo[0] == hi[0] and round(lo[0], 6) in xl:
                    out.append((xl[round(lo[0], 6)], (0.0, lo[1], 0.0, hi[1])))
                elif lo[1] == hi[1] and round(lo[1], 6) in yl:
                    out.append((yl[round(lo[1], 6)], (lo[0], 0.0, hi[0], 0.0)))
                else:
                    out.append(("", lo + hi))
            return sorted(out)

        gseg = norm(gs.get("segments", []), g_ax)
        pseg = norm(ps.get("segments", []), p_ax)
        if len(pseg) != len(gseg):
            return f"{len(pseg)} error bars, expected {len(gseg)}"
        for (pc, p), (gc, g) in zip(pseg, gseg):  # noqa: B905
            if pc != gc:
                return f"interval at {pc or 'a position'!r}, expected one at {gc or 'a position'!r}"
            if not _allclose(p, g, rtol, atol):
                got = "({:.6g}, {:.6g})-({:.6g}, {:.6g})".format(*p)
                want = "({:.6g}, {:.6g})-({:.6g}, {:.6g})".format(*g)
                return f"interval {got}, expected {want}"
        return None
    if kind == "area":
        g, p = gs.get("xy", []), ps.get("xy", [])
        if len(p) != len(g):
            return f"{len(p) // 2} outline vertices, expected {len(g) // 2}"
        if _allclose(p, g, rtol, atol):
            return None
        gp, pp = _points(g[0::2], g[1::2]), _points(p[0::2], p[1::2])
        if all(_allclose(a, b, rtol, atol) for a, b in zip(pp, gp)):  # noqa: B905
            return None
        return "filled area outline differs"
    if kind == "grid":
        ga, pa = gs.get("array", {}), ps.get("array", {})
        if list(pa.get("shape", [])) != list(ga.get("shape", [])):
            return f"shape {pa.get('shape')}, expected {ga.get('shape')}"
        if "values" in ga:
            if not _allclose(pa.get("values", []), ga["values"], rtol, atol):
                bad = next(
                    i
                    for i, (a, b) in enumerate(zip(pa.get("values", []), ga["values"]))  # noqa: B905
                    if not close(_fv(a), _fv(b), rtol, atol)
                )
                return f"cell {bad}: {_fv(pa['values'][bad]):.6g}, expected {_fv(ga['values'][bad]):.6g}"
            return None
        gsum, psum = ga.get("summary", {}), pa.get("summary", {})
        for k in ("mean", "std", "min", "max"):
            if not close(_fv(psum.get(k)), _fv(gsum.get(k)), rtol, atol):
                return f"{k} {psum.get(k)}, expected {gsum.get(k)}"
        if not _allclose(pa.get("sample", []), ga.get("sample", []), rtol, atol):
            return "sampled cells differ"
        return None
    return None


def _pair_series(ps, gs):
    """Pair predicted with gold series: by legend label when the gold labels them all (and the
    prediction uses the same labels), else in drawing order."""
    g_labels = [s.get("label", "") for s in gs]
    p_labels = [s.get("label", "") for s in ps]
    if all(g_labels) and len(set(g_labels)) == len(g_labels) and sorted(p_labels) == sorted(g_labels):
        pmap = {s["label"]: s for s in ps}
        return [(pmap[s["label"]], s, repr(s["label"])) for s in gs], "label"
    pairs = []
    for i, (p, g) in enumerate(zip(ps, gs)):  # noqa: B905
        pairs.append((p, g, repr(g["label"]) if g.get("label") else f"#{i + 1}"))
    return pairs, "order"


def _same_labels(ps, gs):
    """Whether both sides label every series, with the same (distinct) labels."""
    g_labels = [s.get("label", "") for s in gs]
    p_labels = [s.get("label", "") for s in ps]
    return all(g_labels) and len(set(g_labels)) == len(g_labels) and sorted(p_labels) == sorted(g_labels)


def _pool(series):
    """All bars (or error bars) of one axes as one unlabelled series."""
    first = series[0]
    unstable = any(s.get("unstable") for s in series)
    if first.get("kind") == "errorbar":
        segs = [x for s in series for x in s.get("segments") or []]
        return {"kind": "errorbar", "label": "", "segments": segs, "unstable": unstable}
    bars = [b for s in series for b in s.get("bars") or []]
    return {"kind": "bar", "label": "", "orientation": first.get("orientation"), "bars": bars, "unstable": unstable}


def compare_plotdata(pred, gold, rtol=1e-4, atol=1e-8):
    """``(None, summary)`` when ``pred`` plots the same data as ``gold``, else ``(reason, "")``."""
    g_axes = [a for a in gold.get("axes", []) if a.get("series")]
    p_axes = [a for a in pred.get("axes", []) if a.get("series")]
    if len(p_axes) != len(g_axes):
        return f"{len(p_axes)} axes with data, expected {len(g_axes)}", ""
    n = skipped = 0
    for i, (pa, ga) in enumerate(zip(p_axes, g_axes)):  # noqa: B905
        where = f"axes {i + 1}" + (f" ({ga.get('title')!r})" if ga.get("title") else "")
        for kind, name in _FIG_KINDS.items():
            gs = [s for s in ga["series"] if s.get("kind") == kind]
            ps = [s for s in pa["series"] if s.get("kind") == kind]
            if kind in ("bar", "errorbar") and gs and ps and not _same_labels(ps, gs):
                # Bars (and their intervals) whose grouping the legend does not pin down (one
                # container per bar when colour follows the category, or one for all): pool
                # them and compare bar by bar, interval by interval, by category.
                gs, ps = [_pool(gs)], [_pool(ps)]
            if len(ps) != len(gs):
                g_lab = [s.get("label") for s in gs if s.get("label")]
                lost = [lab for lab in g_lab if lab not in {s.get("label") for s in ps}]
                return (
                    f"{where}: {len(ps)} {name} series, expected {len(gs)}"
                    + (f" (missing {lost[:5]})" if lost else ""),
                    "",
                )
            pairs, _ = _pair_series(ps, gs)
            for p, g, label in pairs:
                if g.get("unstable"):
                    skipped += 1  # drawn differently by two gold runs: required, not compared
                    continue
                why = _compare_series(kind, p, g, pa, ga, rtol, atol)
                if why:
                    return f"{where}: {name} series {label}: {why}", ""
                n += 1
    extra = f"; {skipped} series not compared (they differ between two runs of the gold program)" if skipped else ""
    return None, f"{len(g_axes)} axes, {n} series{extra}"


def _load_plotdata(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def check_figure(pred_path, gold_path, params):
    """Compare what the figures plot (recorded plot data), with the table tolerances.

    Series are matched per axes and kind (line/scatter points, bars by category, error-bar
    intervals, filled areas, images/heatmaps) by legend label, else in drawing order. A missing
    or extra series, a dropped category, swapped series, a moved interval or any value beyond
    tolerance fails. SSIM is computed as a secondary number and never decides.
    """
    rtol, atol = float(params.get("rtol", 1e-4)), float(params.get("atol", 1e-8))
    # check_output passes the sidecars; alone, a top-level figure's sidecar is next to it.
    gold_side = params.get("_gold_plotdata") or os.path.join(
        os.path.dirname(gold_path), ".plotdata", os.path.basename(gold_path) + ".json"
    )
    pred_side = params.get("_pred_plotdata") or os.path.join(
        os.path.dirname(pred_path), ".plotdata", os.path.basename(pred_path) + ".json"
    )
    gold = _load_plotdata(gold_side)
    pred = None
    if os.path.isfile(pred_side):
        try:
            pred = _load_plotdata(pred_side)
        except ValueError as exc:
            return False, f"predicted plot data unreadable: {exc}"
    plotly = gold.get("library") == "plotly"
    bad = _not_the_figure(pred_path, gold_path, plotly, pred)
    if bad:
        return False, bad
    if pred is None:
        how = "plotly's write_json/write_html/write_image" if plotly else "matplotlib's savefig"
        return False, f"no plot data recorded for the predicted figure (save it with {how})"
    why, summary = compare_plotdata(pred, gold, rtol, atol)
    vector = _vector_kind(gold_path)
    ext = os.path.splitext(gold_path)[1].lower()
    unrendered = not gold.get("rendered", True) or not pred.get("rendered", True)
    if plotly and (ext in (".json", ".html", ".htm") or unrendered):
        secondary = "; no pixel metric (plotly figure, judged by the data of its figure object)"
    elif vector is not None:
        secondary = "; SSIM not computed (vector figure)"
    else:
        try:
            # any size: a figure saved at another size or dpi is resized before SSIM is taken
            _, img_msg = check_image(pred_path, gold_path, {**params, "size_tolerance": 10**9})
            secondary = f"; {img_msg} (secondary, not deciding)"
        except Exception as exc:  # the pixel metric is informative only
            secondary = f"; SSIM not computed ({type(exc).__name__})"
    if why:
        return False, f"plotted data differ: {why}{secondary}"
    return True, f"plotted data match ({summary}){secondary}"


def _plotly_json(path):
    """Whether ``path`` holds a plotly figure as JSON (``{"data": [...], ...}``)."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and isinstance(doc.get("data"), list)


def _not_the_figure(pred_path, gold_path, plotly, pred):
    """Why the predicted file is not a figure of the gold's format (``None`` when it is one).

    A plotly figure written as JSON must be plotly JSON, as HTML a page that loads plotly; an
    image plotly could not render (no kaleido/Chrome where the program ran: the recording says
    ``"rendered": false``) holds the figure's JSON instead of pixels, and that is accepted.
    """
    ext = os.path.splitext(gold_path)[1].lower()
    if plotly and ext == ".json":
        return None if _plotly_json(pred_path) else "prediction is not a plotly figure in JSON (fig.write_json)"
    if plotly and ext in (".html", ".htm"):
        try:
            with open(pred_path, "rb") as fh:
                head = fh.read().lower()
        except OSError as exc:
            return f"prediction unreadable: {exc}"
        ok = b"<" in head and b"plotly" in head
        return None if ok else "prediction is not a plotly HTML page (fig.write_html)"
    if plotly and pred is not None and pred.get("rendered") is False and _plotly_json(pred_path):
        return None  # no image renderer where the program ran: the file holds the figure's JSON
    vector = _vector_kind(gold_path)
    if vector is not None:  # a PDF/SVG/EPS figure: the file must be one of that format
        return None if _is_vector(pred_path, vector) else f"prediction is not a {vector} file"
    try:
        from PIL import Image
    except ImportError:  # matplotlib depends on Pillow; without it only the data are judged
        return None
    try:
        with Image.open(pred_path) as im:
            im.verify()
    except Exception as exc:  # the file must be the figure, not something else
        return f"prediction is not an image: {type(exc).__name__}: {exc}"
    return None


_VECTOR_MAGIC = {".pdf": (b"%PDF",), ".eps": (b"%!PS", b"\xc5\xd0\xd3\xc6"), ".ps": (b"%!PS",)}


def _vector_kind(path: str) -> str | None:
    ext = os.path.splitext(path)[1].lower()
    return ext if ext in (".pdf", ".svg", ".eps", ".ps") else None


def _is_vector(path: str, ext: str) -> bool:
    """Whether ``path`` is a file of vector format ``ext`` (by its first bytes, not its name)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    if ext == ".svg":
        return b"<svg" in head
    return head.startswith(_VECTOR_MAGIC[ext])


# ---------------------------------------------------------------------------------- dispatch
CHECKS = {
    "table": check_table,
    "json": check_json,
    "scalar": check_scalar,
    "text": check_text,
    "array": check_array,
    "image": check_image,
    "figure": check_figure,
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
        elif entry["kind"] == "figure":
            params = dict(entry.get("params", {}))
            params["_gold_plotdata"] = os.path.join(gold_dir, ".plotdata", rel + ".json")
            params["_pred_plotdata"] = os.path.join(pred_dir, ".plotdata", rel + ".json")
            ok, msg = check_figure(pred_path, gold_path, params)
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
