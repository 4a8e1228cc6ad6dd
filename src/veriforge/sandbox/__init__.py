"""Run untrusted commands and Python programs with limits, isolation and a truthful report.

See docs/sandbox.md for what is enforced how, and :func:`capabilities` for what this machine
allows.
"""

from __future__ import annotations

from veriforge.sandbox.capabilities import capabilities
from veriforge.sandbox.limits import Limits
from veriforge.sandbox.policy import IsolationUnavailableError, Policy
from veriforge.sandbox.result import STATUSES, SandboxResult, Status
from veriforge.sandbox.runner import (
    ExecutableNotFoundError,
    SandboxProcess,
    SandboxSetupError,
    ToolTimeoutError,
    planned_isolation,
    run,
    run_async,
    run_python,
    run_python_async,
    run_tool,
    spawn,
)
from veriforge.sandbox.workdir import WorkdirError

__all__ = [
    "STATUSES",
    "ExecutableNotFoundError",
    "IsolationUnavailableError",
    "Limits",
    "Policy",
    "SandboxProcess",
    "SandboxResult",
    "SandboxSetupError",
    "Status",
    "ToolTimeoutError",
    "WorkdirError",
    "capabilities",
    "planned_isolation",
    "run",
    "run_async",
    "run_python",
    "run_python_async",
    "run_tool",
    "spawn",
]
