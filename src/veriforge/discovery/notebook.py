"""Turn a Jupyter notebook into a plain Python script (code cells in order, magics removed).

Notebooks are analysed and run as scripts: cells are concatenated with a ``# In[k]`` marker so line
numbers in errors still point at a cell. IPython magics and shell escapes (``%matplotlib``,
``!pip install``) have no meaning outside IPython and are commented out; a cell whose last line is a
bare expression (a displayed value) keeps working as a no-op statement; a bare ``display(...)``
(Jupyter's built-in) gets its import from IPython.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from veriforge.discovery.errors import DiscoveryError

__all__ = ["NotebookError", "notebook_code_size", "notebook_to_script"]


class NotebookError(DiscoveryError):
    """The file is not a readable notebook."""


def _code_cells(path: str | Path) -> list[str]:
    """The source of each code cell (outputs, images and markdown are not code)."""
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotebookError(f"{path}: not a readable notebook ({exc})") from exc
    if not isinstance(nb, dict):
        raise NotebookError(f"{path}: not a notebook (top level is not an object)")
    cells = nb.get("cells")
    if cells is None:  # nbformat 3 kept cells inside worksheets
        cells = [c for ws in nb.get("worksheets", []) for c in ws.get("cells", [])]
    out = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", cell.get("input", ""))
        out.append("".join(source) if isinstance(source, list) else str(source))
    return out


def notebook_code_size(path: str | Path) -> int:
    """UTF-8 bytes of the notebook's code cells: its size as a program, whatever its outputs weigh."""
    return sum(len(text.encode("utf-8")) for text in _code_cells(path))


# IPython help syntax: ``obj?``, ``obj.attr??``, ``np.*load*?``, ``?obj`` -- a whole line that is a
# (dotted, wildcarded) name with question marks. Only that: a statement whose comment or string
# ends with "?" (``R = f(x)  # tweak later?``) is code, and commenting it out broke the program.
_HELP = re.compile(r"^(\?{1,2}[\w.*]+|[\w.*]+\?{1,2})\s*$")


def notebook_to_script(path: str | Path) -> str:
    """The code cells of the notebook at ``path`` as one Python script."""
    out: list[str] = []
    k = 0
    for text in _code_cells(path):
        k += 1
        out.append(f"# In[{k}]:")
        for line in text.splitlines():
            stripped = line.lstrip()
            if stripped.startswith(("%", "!")) or _HELP.match(stripped):
                out.append(line[: len(line) - len(stripped)] + "# (IPython) " + stripped)
            else:
                out.append(line)
        out.append("")
    return _jupyter_builtins("\n".join(out) + "\n")


# Jupyter's user namespace has display() without an import; run as a script, a notebook that
# calls it bare dies with NameError (KimmeridgePyrite's S_model: display(ui, output)).
JUPYTER_DISPLAY = "from IPython.display import display  # Jupyter's built-in display() (added by veriforge)"


def _jupyter_builtins(script: str) -> str:
    """``script`` with ``display`` imported first (in cell 1) when the notebook calls it bare.

    Always from IPython, as Jupyter provides it: a later ``import`` or ``def`` of its own still
    rebinds the name where the notebook does. Left alone when the code does not parse or has
    ``from __future__`` imports (they must stay first).
    """
    try:
        tree = ast.parse(script)
    except SyntaxError:
        return script
    calls = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "display" for n in ast.walk(tree)
    )
    future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in tree.body)
    if not calls or future:
        return script
    head, _, rest = script.partition("\n")
    return f"{head}\n{JUPYTER_DISPLAY}\n{rest}"
