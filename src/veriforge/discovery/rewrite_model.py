"""Optional model-assisted standalone rewrite, used only when the deterministic rewrite fails.

The model gets the program, the repository files it reads and the rule (inputs under
``datasets/<same path>``, outputs under ``pred_results/``); its answer is accepted only if the
static checker agrees it is standalone (:func:`veriforge.discovery.standalone.check_standalone`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from veriforge.discovery.errors import RewriteError
from veriforge.discovery.mine import Candidate
from veriforge.discovery.standalone import Standalone, check_standalone, program_name_for

__all__ = ["model_rewrite"]

PROMPT = """You are making a research script standalone for a benchmark.
Rewrite ONLY the file paths in the program below, keeping every other line of its logic unchanged:
- every input file it reads must be read from `datasets/<path relative to the repository root>`;
  the repository files it reads are: {datasets}
- every output file must be written directly under `pred_results/` (keep the file names).
The deterministic rewriter failed because: {why}
Answer with the complete rewritten program in one ```python code block and nothing else.

Repository file: {path}
```python
{source}
```"""

_BLOCK = re.compile(r"```(?:python)?\n(.*?)```", re.S)


def model_rewrite(candidate: Candidate, repo_root: str | Path, client: Any, why: str) -> Standalone:
    """Ask ``client`` (a :class:`veriforge.llm.LLMClient`) for the rewrite; verify it statically."""
    from veriforge.discovery.evalsynth.model import run_sync
    from veriforge.discovery.iocalls import analyse

    prompt = PROMPT.format(
        datasets=", ".join(candidate.datasets), why=why, path=candidate.path, source=candidate.source
    )
    resp = run_sync(client.chat([{"role": "user", "content": prompt}], temperature=0.0, max_tokens=8192))
    text = resp.texts[0] if resp.texts else ""
    m = _BLOCK.search(text)
    program = m.group(1) if m else text
    problems = check_standalone(program)
    if problems:
        raise RewriteError("model rewrite is not standalone: " + "; ".join(problems))
    outputs = sorted({w.value.rstrip("/") for w in analyse(program).writes if w.value})
    return Standalone(
        program=program,
        program_name=program_name_for(candidate),
        datasets=list(candidate.datasets),
        outputs=[o if o.startswith("pred_results/") else f"pred_results/{o}" for o in outputs],
        method="model",
    )
