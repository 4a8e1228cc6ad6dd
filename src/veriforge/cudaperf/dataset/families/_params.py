"""The ``[[params]]`` list and the C signature of a generated task, built together.

Four C families (matmul, softmax, sort, sparse) declare parameters the same way; building the
task.toml entries and the ``reference``/``solve`` signature from one call means they can never
disagree (a mismatch is a task that fails validation and is dropped from the dataset).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ParamList"]


class ParamList:
    """Parameters in signature order: ``params`` (task.toml tables), ``sig`` and ``args`` (C text)."""

    def __init__(self) -> None:
        self.params: list[dict[str, Any]] = []
        self.parts: list[str] = []

    def ptr(self, name: str, ctype: str, role: str, size: str, init: str | None = None) -> None:
        full = f"const {ctype}*" if role == "in" else f"{ctype}*"
        entry: dict[str, Any] = {"name": name, "type": full, "role": role, "size": size}
        if init:
            entry["init"] = init
        self.params.append(entry)
        self.parts.append(f"{full} {name}")

    def scalar(self, name: str, ctype: str = "int") -> None:
        self.params.append({"name": name, "type": ctype, "role": "scalar", "value": name})
        self.parts.append(f"{ctype} {name}")

    @property
    def sig(self) -> str:
        return ", ".join(self.parts)

    @property
    def args(self) -> str:
        return ", ".join(p.split()[-1] for p in self.parts)
