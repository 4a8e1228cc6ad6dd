"""Reading a source file the user named, with an error that names the file.

``Path.read_text`` raises a bare ``UnicodeDecodeError`` ("'utf-8' codec can't decode byte 0xff
in position 0") that says neither which file nor what to do; every command that reads a user's
kernel, candidate or host program goes through :func:`read_source` instead.
"""

from __future__ import annotations

from pathlib import Path

from veriforge.errors import InputFileError

__all__ = ["read_source"]


def read_source(path: str | Path) -> str:
    """The text of ``path`` as UTF-8; :class:`InputFileError` naming the file (and the first bad
    byte's line) when it is missing, unreadable or not UTF-8."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFileError(f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                             f"{exc.start}); save the file as UTF-8") from None
