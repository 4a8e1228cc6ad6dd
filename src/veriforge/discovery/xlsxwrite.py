"""A minimal ``.xlsx`` writer (one sheet of cells), for validation controls of Excel outputs.

An Excel table's negative controls (a perturbed value, a dropped row, renamed columns) must be
real workbooks: CSV text under an ``.xlsx`` name is rejected by the evaluator as unreadable, so a
control built that way would "fail" for the wrong reason and validate nothing. The evaluator reads
workbooks with the standard library (``evalsynth.runtime.xlsx_sheets``), and the controls are
written the same way, so validation needs no openpyxl either. Numeric cells are written as
numbers, everything else as inline strings.
"""

from __future__ import annotations

import io
import re
import zipfile
from xml.sax.saxutils import escape

__all__ = ["write_xlsx"]

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")

_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    "</Types>"
)
_ROOT_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="xl/workbook.xml"/></Relationships>'
)
_WORKBOOK_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
    'Target="worksheets/sheet1.xml"/></Relationships>'
)


def _column(j: int) -> str:
    name = ""
    j += 1
    while j:
        j, r = divmod(j - 1, 26)
        name = chr(65 + r) + name
    return name


def write_xlsx(rows: list[list[str]], sheet: str = "Sheet1") -> bytes:
    """The bytes of a one-sheet workbook holding ``rows`` (cell text; numbers stay numbers)."""
    lines = []
    for i, row in enumerate(rows, start=1):
        cells = []
        for j, value in enumerate(row):
            ref = f"{_column(j)}{i}"
            text = str(value)
            if text == "":
                continue
            if _NUMBER.match(text.strip()):
                cells.append(f'<c r="{ref}"><v>{text.strip()}</v></c>')
            else:
                cells.append(f'<c r="{ref}" t="inlineStr"><is><t xml:space="preserve">{escape(text)}</t></is></c>')
        lines.append(f'<row r="{i}">{"".join(cells)}</row>')
    worksheet = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f"<sheetData>{''.join(lines)}</sheetData></worksheet>"
    )
    workbook = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        f'<sheets><sheet name="{escape(sheet)}" sheetId="1" r:id="rId1"/></sheets></workbook>'
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", _CONTENT_TYPES)
        zf.writestr("_rels/.rels", _ROOT_RELS)
        zf.writestr("xl/workbook.xml", workbook)
        zf.writestr("xl/_rels/workbook.xml.rels", _WORKBOOK_RELS)
        zf.writestr("xl/worksheets/sheet1.xml", worksheet)
    return buf.getvalue()
