"""Dataset previews and folder trees in ScienceAgentBench's style (D3-Gym pipeline stage 5).

An agent solving a task sees the data only through these previews and the folder tree, so a
preview must show what a scientist would glance at first: column names and first rows of a
table, the structure of a JSON document, shapes and dtypes of arrays, an image's size and mode.
Each preview is framed as ScienceAgentBench frames them::

    [START Preview of datasets/cells.csv]
    cell,area,intensity
    ...
    [END Preview of datasets/cells.csv]

Paths are shown relative to the task folder (``datasets/...``), i.e. exactly the path the
program opens. Optional readers (h5py, openpyxl, PIL) are used when installed; without them the
preview says so rather than guessing. Nothing here unpickles or executes repository data.
"""

from __future__ import annotations

import csv
import io
import json
import mimetypes
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HEAD_ROWS = 5
TEXT_LINES = 10
LINE_CHARS = 200
PER_FILE_CHARS = 3000
TOTAL_CHARS = 20000

TABLE_SEPS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
IMAGE_EXT = {".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp"}
HDF5_EXT = {".h5", ".hdf5", ".hdf", ".he5"}
EXCEL_EXT = {".xlsx", ".xlsm"}
_SKIP_NAMES = {".DS_Store", "Thumbs.db", ".gitkeep"}


def _clip(line: str, n: int = LINE_CHARS) -> str:
    return line if len(line) <= n else line[:n] + " ..."


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _label(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.name


def preview_dataset(
    path: Path | str, *, root: Path | str | None = None, max_chars: int = PER_FILE_CHARS
) -> str:
    """One file's preview, framed ``[START Preview of <relpath>]`` … ``[END Preview of <relpath>]``.

    ``relpath`` is relative to ``root`` (default: the file's name only).
    """
    path = Path(path)
    label = _label(path, Path(root) if root is not None else None)
    try:
        body = _body(path)
    except Exception as exc:  # a corrupt file gets a one-line note, never a traceback
        body = f"(could not be previewed: {type(exc).__name__}: {exc}; {_human(path.stat().st_size)})"
    if len(body) > max_chars:
        body = body[:max_chars].rstrip() + f"\n... (preview truncated at {max_chars} characters)"
    return f"[START Preview of {label}]\n{body.rstrip()}\n[END Preview of {label}]"


def _body(path: Path) -> str:
    ext = path.suffix.lower()
    size = path.stat().st_size
    if size == 0:
        return "(empty file)"
    if ext in TABLE_SEPS:
        return _table(path, TABLE_SEPS[ext])
    if ext == ".json":
        return _json(path)
    if ext in {".jsonl", ".ndjson"}:
        return _text(path, note="JSON Lines")
    if ext == ".npy":
        return _npy(path)
    if ext == ".npz":
        return _npz(path)
    if ext in HDF5_EXT:
        return _hdf5(path)
    if ext in IMAGE_EXT:
        return _image(path)
    if ext in EXCEL_EXT:
        return _excel(path)
    if ext in {".xls"}:
        return f"Excel 97-2003 workbook, {_human(size)} (not previewed: needs xlrd)"
    with path.open("rb") as fh:
        head = fh.read(4096)
    if _looks_like_text(head):
        return _text(path)
    kind = mimetypes.guess_type(path.name)[0] or "unknown binary format"
    return f"binary file ({kind}), {_human(size)}; not previewed"


def _looks_like_text(head: bytes) -> bool:
    """UTF-8 without NUL bytes (a multi-byte character cut at the end of ``head`` is fine)."""
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3
    return True


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _table(path: Path, sep: str) -> str:
    lines: list[str] = []
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as fh:
        for i, line in enumerate(fh):
            if i > HEAD_ROWS:
                break
            lines.append(_clip(line.rstrip("\r\n")))
    try:
        header = next(csv.reader(io.StringIO(lines[0]), delimiter=sep)) if lines else []
    except csv.Error:
        header = []
    n_rows = max(0, _count_lines(path) - 1)
    note = f"({n_rows} data rows, {len(header)} columns: {', '.join(h.strip() for h in header)})"
    return "\n".join([*lines, "...", _clip(note, 1000)]) if n_rows > HEAD_ROWS else "\n".join([*lines, note])


def _describe(obj: Any, depth: int = 0, max_depth: int = 4, max_items: int = 8) -> list[str]:
    pad = "  " * depth
    if isinstance(obj, dict):
        out = [f"{pad}object with {len(obj)} keys"] if depth == 0 else []
        for i, (k, v) in enumerate(obj.items()):
            if i == max_items:
                out.append(f"{pad}... {len(obj) - max_items} more keys")
                break
            if isinstance(v, (dict, list)) and depth < max_depth:
                kind = f"object ({len(v)} keys)" if isinstance(v, dict) else f"list of {len(v)}"
                out.append(f"{pad}{k!r}: {kind}")
                out.extend(_describe(v, depth + 1, max_depth, max_items))
            else:
                out.append(f"{pad}{k!r}: {_leaf(v)}")
        return out
    if isinstance(obj, list):
        out = [f"{pad}list of {len(obj)} items"] if depth == 0 else []
        if obj:
            types = sorted({type(x).__name__ for x in obj})
            out.append(f"{pad}item types: {', '.join(types)}; first item:")
            first = obj[0]
            if isinstance(first, (dict, list)) and depth < max_depth:
                out.extend(_describe(first, depth + 1, max_depth, max_items))
            else:
                out.append(f"{pad}  {_leaf(first)}")
        return out
    return [f"{pad}{_leaf(obj)}"]


def _leaf(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return f"{type(v).__name__} of {len(v)}"
    text = json.dumps(v)
    return f"{type(v).__name__} = {_clip(text, 80)}"


def _json(path: Path) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except ValueError as exc:
        return f"(not valid JSON: {exc})\n" + _text(path)
    return "JSON structure:\n" + "\n".join(_describe(data))


def _npy(path: Path) -> str:
    import numpy as np

    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError:
        return f"NumPy array of Python objects, {_human(path.stat().st_size)} (pickled; not loaded)"
    return _array_summary("array", arr)


def _array_summary(name: str, arr: Any) -> str:
    import numpy as np

    flat = np.asarray(arr).reshape(-1)[:8]
    values = np.array2string(np.asarray(flat), precision=4, separator=", ", threshold=8)
    more = " ..." if arr.size > 8 else ""
    return f"{name}: shape={tuple(arr.shape)}, dtype={arr.dtype}; first values: {values}{more}"


def _npz(path: Path) -> str:
    import numpy as np

    lines = []
    with np.load(path, allow_pickle=False) as z:
        lines.append(f"NumPy archive with {len(z.files)} arrays:")
        for name in z.files[:20]:
            try:
                lines.append(_array_summary(name, z[name]))
            except ValueError:
                lines.append(f"{name}: object array (pickled; not loaded)")
        if len(z.files) > 20:
            lines.append(f"... {len(z.files) - 20} more arrays")
    return "\n".join(lines)


def _hdf5(path: Path) -> str:
    try:
        import h5py
    except ImportError:
        return f"HDF5 file, {_human(path.stat().st_size)} (h5py is not installed: structure not shown)"
    lines: list[str] = ["HDF5 file:"]

    def visit(name: str, obj: Any) -> None:
        if len(lines) > 40:
            return
        if isinstance(obj, h5py.Dataset):
            lines.append(f"dataset /{name}: shape={obj.shape}, dtype={obj.dtype}")
        else:
            lines.append(f"group /{name}")

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return "\n".join(lines)


def _image(path: Path) -> str:
    try:
        from PIL import Image
    except ImportError:
        return f"image file, {_human(path.stat().st_size)} (PIL is not installed: size not shown)"
    with Image.open(path) as im:
        return f"image: format={im.format}, size={im.size[0]}x{im.size[1]} pixels, mode={im.mode}"


def _excel(path: Path) -> str:
    try:
        import openpyxl
    except ImportError:
        return f"Excel workbook, {_human(path.stat().st_size)} (openpyxl is not installed: not previewed)"
    wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    lines = []
    try:
        for ws in wb.worksheets[:5]:
            lines.append(f"sheet {ws.title!r}:")
            for i, row in enumerate(ws.iter_rows(values_only=True)):
                if i > HEAD_ROWS:
                    lines.append("...")
                    break
                lines.append(_clip(",".join("" if v is None else str(v) for v in row)))
    finally:
        wb.close()
    return "\n".join(lines)


def _text(path: Path, note: str | None = None) -> str:
    lines = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for i, line in enumerate(fh):
            if i == TEXT_LINES:
                lines.append("...")
                break
            lines.append(_clip(line.rstrip("\r\n")))
    total = _count_lines(path)
    suffix = f"({note}, {total} lines)" if note else f"({total} lines)"
    first = [t for t in lines[0].split() if t != "..."] if lines else []
    if not note and first and all(_is_number(t) for t in first):
        suffix = f"(whitespace-separated numeric matrix: {total} rows x {len(first)} columns)"
    return "\n".join([*lines, suffix])


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _files(datasets_dir: Path) -> list[Path]:
    """Every data file, in a stable order; hidden files and folders are not data."""
    out = []
    for p in sorted(datasets_dir.rglob("*"), key=lambda q: q.relative_to(datasets_dir).as_posix()):
        rel = p.relative_to(datasets_dir)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts) and p.name not in _SKIP_NAMES:
            out.append(p)
    return out


def dataset_preview(
    datasets_dir: Path | str, *, max_chars: int = TOTAL_CHARS, per_file: int = PER_FILE_CHARS
) -> str:
    """Previews of every file under ``datasets_dir``, joined; what did not fit is named at the end.

    Labels are relative to the folder *containing* ``datasets_dir`` (``datasets/x.csv``).
    """
    datasets_dir = Path(datasets_dir)
    root = datasets_dir.parent
    parts: list[str] = []
    used = 0
    omitted: list[str] = []
    for p in _files(datasets_dir):
        block = preview_dataset(p, root=root, max_chars=per_file)
        if used + len(block) > max_chars:
            omitted.append(_label(p, root))
            continue
        parts.append(block)
        used += len(block) + 2
    if omitted:
        names = ", ".join(omitted[:20]) + (f", ... ({len(omitted) - 20} more)" if len(omitted) > 20 else "")
        parts.append(f"[{len(omitted)} more file(s) not previewed (preview length cap {max_chars}): {names}]")
    return "\n\n".join(parts)


def folder_tree(datasets_dir: Path | str) -> str:
    """The ``dataset_folder_tree`` field: ScienceAgentBench's ``|--`` indented listing."""
    datasets_dir = Path(datasets_dir)
    lines = [f"|-- {datasets_dir.name}/"]

    def walk(d: Path, depth: int) -> None:
        entries = sorted(
            (e for e in d.iterdir() if not e.name.startswith(".") and e.name not in _SKIP_NAMES),
            key=lambda e: (e.is_file(), e.name),
        )
        for e in entries:
            prefix = "|" + "-" * (2 * depth + 2) + " "
            lines.append(f"{prefix}{e.name}/" if e.is_dir() else f"{prefix}{e.name}")
            if e.is_dir():
                walk(e, depth + 1)

    if datasets_dir.is_dir():
        walk(datasets_dir, 1)
    return "\n".join(lines)


def previews_for(paths: Iterable[Path | str], root: Path | str) -> str:
    """Previews of chosen files only (e.g. the inputs one program reads), in the given order."""
    return "\n\n".join(preview_dataset(p, root=root) for p in paths)
