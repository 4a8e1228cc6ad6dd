"""Write the self-contained ``eval()`` script for a plan.

The script is the plan (as JSON, readable at the top of the file), the comparison routines of
:mod:`veriforge.discovery.evalsynth.runtime` copied in verbatim, any model-written checks as
string literals, and a three-line ``eval``. Copying rather than importing keeps the task folder
independent of veriforge's version; keeping the plan as data (not code) means the deterministic
evaluator is exactly as trustworthy as the tested runtime.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_RUNTIME = Path(__file__).with_name("runtime.py")

_HEADER = '''"""Evaluator for a D3-Gym task, synthesized by veriforge (plan + comparison routines).

Usage: eval(pred_dir="pred_results", gold_dir="gold_results") -> (passed, message)
       python {name} [PRED_DIR [GOLD_DIR]]   prints [passed, message] as JSON
Plan (what counts as correct):
{plan_text}
"""
'''

_FOOTER = '''

PLAN = json.loads({plan_literal})
MODEL_CHECKS = {model_literal}


def eval(pred_dir="pred_results", gold_dir="gold_results"):  # ScienceAgentBench names it so
    """(passed, message): every planned output must match its gold counterpart."""
    return evaluate_plan(PLAN, pred_dir, gold_dir, MODEL_CHECKS)


if __name__ == "__main__":
    import sys

    print(json.dumps(list(eval(*sys.argv[1:3]))))
'''


def runtime_source() -> str:
    """The comparison routines as they will appear inside every generated script."""
    return _RUNTIME.read_text(encoding="utf-8")


def render_script(
    plan: dict[str, Any], model_checks: dict[str, str] | None = None, *, name: str = "eval.py"
) -> str:
    """The full evaluation script for ``plan`` (model checks keyed by ``entry["model_code"]``)."""
    plan_json = json.dumps(plan, indent=1, sort_keys=True)
    plan_text = "\n".join("    " + line for line in plan_json.replace('"""', "'''").splitlines())
    body = runtime_source()
    # The runtime's own docstring would follow ours; keep only its code.
    if body.startswith('"""'):
        body = body[body.index('"""', 3) + 3 :].lstrip("\n")
    return (
        _HEADER.format(name=name, plan_text=plan_text)
        + "\n"
        + body.rstrip()
        + "\n"
        + _FOOTER.format(
            plan_literal=repr(json.dumps(plan, sort_keys=True)), model_literal=repr(dict(model_checks or {}))
        )
    )
