"""The user's ``sandbox.*`` settings, applied to candidate evaluations as upper bounds.

Each back-end sets limits its candidates need (the CPU runtime maps a lot of address space and
runs a thread per emulated block; PyTorch's kernel server adds threads), so the generic defaults
of ``[sandbox]`` (4 GB, 64 processes) would break correct candidates. A value the user *set* --
``--set sandbox.memory_mb=2048``, ``veriforge.toml`` -- is applied on top: it can only tighten the
back-end's limit, never loosen it. Settings left at their defaults change nothing, so results and
their cache keys stay what they were.

Not applied: ``memory_mb`` on GPU back-ends (an address-space limit breaks the CUDA driver, which
reserves far more virtual memory than it uses), and ``network`` (candidates never get a network).
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["TIGHTENABLE", "as_env", "overrides", "tighten"]

TIGHTENABLE = ("cpu_s", "memory_mb", "file_size_mb", "max_procs", "max_output_bytes", "max_open_files")


def overrides() -> dict[str, float]:
    """``sandbox.*`` limits the active settings set to something other than their default."""
    from veriforge.core.config import SandboxSettings, active_settings

    current, default = active_settings().sandbox, SandboxSettings()
    return {
        name: getattr(current, name)
        for name in TIGHTENABLE
        if getattr(current, name) != getattr(default, name)
    }


def tighten(policy: Any, *, gpu: bool) -> Any:
    """``policy`` (a sandbox Policy) with every configured limit applied as an upper bound."""
    wanted = overrides()
    if not wanted:
        return policy
    limits = policy.limits
    changes: dict[str, Any] = {}
    for name in ("cpu_s", "memory_mb", "file_size_mb", "max_procs", "max_output_bytes"):
        if name not in wanted or (name == "memory_mb" and gpu):
            continue
        have = getattr(limits, name)
        value = wanted[name] if have is None else min(have, wanted[name])
        changes[name] = int(value) if name != "cpu_s" else float(value)
    new_limits = dataclasses.replace(limits, **changes)
    open_files = policy.max_open_files
    if "max_open_files" in wanted:
        open_files = min(open_files, int(wanted["max_open_files"])) if open_files else int(wanted["max_open_files"])
    return dataclasses.replace(policy, limits=new_limits, max_open_files=open_files)


def as_env() -> dict[str, str]:
    """The overrides as ``VERIFORGE_SANDBOX__*`` variables, for the confined evaluation process:
    the CPU runtime's kernel server is started *there* (from a fork server that never saw this
    command's ``--set``), and takes its limits from these."""
    return {f"VERIFORGE_SANDBOX__{name.upper()}": str(value) for name, value in overrides().items()}
