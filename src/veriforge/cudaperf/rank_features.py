"""Static features of a candidate program for CudaPerf's offline rankers (no program is run).

The ranker exists to pick which candidates are worth evaluating, so everything here must be
computable *before* evaluation: from the source text alone (:func:`text_features`), and, when the
task is known, from the static analysis and the host-code interpretation the cost model uses
(:func:`analysis_features`: coalescing, bank conflicts, occupancy, FLOPs, barriers, divergence at
one input configuration). Nothing is compiled for the CPU runtime and no kernel is executed.

Two rules keep the features honest:

* **Comments and docstrings are removed first** (:func:`normalise_source`). The bundled
  implementations explain their strategy in comments ("why it is slow: ..."); a ranker that read
  them would learn the prose, and a policy shaped by it would learn to write "// fastest kernel".
* **The estimated time is never a feature.** Pairs built from the CPU back-end are labelled by the
  cost model's time; giving the ranker that number would make it the label. The analysis features
  are the cost model's *inputs*, which is the point of a static ranker, and the benchmark also
  scores every ranker on pairs with measured GPU labels, where copying the cost model does not pay
  by construction.

Features are a named dict (``FEATURE_NAMES`` fixes the order of the vector); a feature the analysis
did not determine is 0 with ``analysis_available`` telling the model whether any analysis was
available at all, never a guess.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from veriforge.core import pyparse as _pyparse
from veriforge.cuda.source_reader import blank

__all__ = ["ANALYSIS_FEATURES", "FEATURES_VERSION", "FEATURE_NAMES", "TEXT_FEATURES", "analysis_features",
           "feature_vector", "normalise_source", "static_features", "text_features"]

FEATURES_VERSION = "cudaperf-features/1"

#: Lexical signals, each ``log1p(count)`` over the comment-free source.
_PATTERNS: dict[str, str] = {
    "kernels": r"__global__",
    "launches": r"<<<",
    "syncthreads": r"__syncthreads\s*\(",
    "syncwarp": r"__syncwarp\s*\(",
    "shuffles": r"__shfl\w*\s*\(",
    "warp_votes": r"__(?:ballot|any|all|reduce_\w+)_sync\s*\(",
    "atomics": r"\batomic[A-Z]\w*\s*\(",
    "shared_decls": r"__shared__",
    "vector_types": r"\b(?:float|int|uint|double|half)[24]\b",
    "unroll_pragmas": r"#\s*pragma\s+unroll",
    "restrict": r"__restrict__",
    "ldg": r"__ldg\s*\(",
    "grid_stride": r"(?:gridDim\.\w\s*\*\s*blockDim\.\w|blockDim\.\w\s*\*\s*gridDim\.\w)",
    "for_loops": r"\bfor\s*\(",
    "while_loops": r"\bwhile\s*\(",
    "branches": r"\bif\s*\(",
    "device_allocs": r"\bcudaMalloc\w*\s*\(",
    "fma": r"\b(?:__)?fmaf?\s*\(",
    "constant_mem": r"__constant__",
    "thread_idx_y": r"threadIdx\.y",
    "templates": r"\btemplate\s*<",
}
TEXT_FEATURES: tuple[str, ...] = (*_PATTERNS, "lines")

#: Analysis features, pooled over a candidate's kernels (see :func:`analysis_features`).
ANALYSIS_FEATURES: tuple[str, ...] = (
    "analysis_available", "global_load_efficiency", "global_store_efficiency",
    "log2_load_sectors_per_request", "log2_store_sectors_per_request", "log2_bank_conflict_ways",
    "theoretical_occupancy", "registers_per_thread", "spills", "barriers", "divergent_branches",
    "log_flops", "log_arithmetic_intensity", "log_shared_bytes",
)
FEATURE_NAMES: tuple[str, ...] = tuple(f"text.{n}" for n in TEXT_FEATURES) + tuple(
    f"analysis.{n}" for n in ANALYSIS_FEATURES)

def _strip_c_comments(text: str) -> str:
    """Each comment one space; string and char literals kept (a ``"//"`` inside one is not a comment)."""
    return blank(text, literals=False, squeeze=True)


def _compact(text: str) -> str:
    lines = [ln.rstrip() for ln in text.splitlines()]
    return "\n".join(ln for ln in lines if ln.strip()) + "\n"


def _is_python(text: str) -> bool:
    return bool(re.search(r"^\s*(?:import|from)\s+\w+", text, re.MULTILINE)) and "def " in text


def normalise_source(text: str) -> str:
    """The program without comments, docstrings and blank lines (what every ranker reads).

    A torch2cuda module (Python) becomes its CUDA source string(s), comment-free, followed by the
    module's code re-printed from its syntax tree without docstrings and comments. A module that
    does not parse is treated as C/CUDA text.
    """
    if _is_python(text):
        try:
            tree = _pyparse.parse(text)
        except SyntaxError:
            return _compact(_strip_c_comments(text))
        cuda_parts: list[str] = []
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                    isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                body.pop(0)  # docstring
                if not body:
                    body.append(ast.Pass())
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "__global__" in node.value:
                cuda_parts.append(_strip_c_comments(node.value))
                node.value = "<cuda source>"
        return _compact("\n".join(cuda_parts) + "\n" + ast.unparse(tree))
    return _compact(_strip_c_comments(text))


def text_features(source: str) -> dict[str, float]:
    """``log1p`` counts of lexical performance signals in the comment-free source."""
    clean = normalise_source(source)
    out = {name: math.log1p(len(re.findall(pat, clean))) for name, pat in _PATTERNS.items()}
    out["lines"] = math.log1p(clean.count("\n"))
    return out


def _pool(features: Mapping[str, Any]) -> dict[str, float]:
    """Summarise the shared feature vocabulary (``kernel.``-prefixed for multi-kernel candidates)."""
    merged: dict[str, list[float]] = {}
    for key, value in features.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            continue
        merged.setdefault(key.rsplit(".", 1)[-1], []).append(float(value))

    def mean(name: str) -> float:
        v = merged.get(name)
        return sum(v) / len(v) if v else 0.0

    out = {name: 0.0 for name in ANALYSIS_FEATURES}
    if not merged:
        return out
    out["analysis_available"] = 1.0
    out["global_load_efficiency"] = mean("global_load_efficiency")
    out["global_store_efficiency"] = mean("global_store_efficiency")
    for name, key in (("log2_load_sectors_per_request", "global_load_sectors_per_request"),
                      ("log2_store_sectors_per_request", "global_store_sectors_per_request")):
        if merged.get(key):
            out[name] = math.log2(max(1.0, max(merged[key])))
    ways = merged.get("shared_load_bank_conflict_ways", []) + merged.get("shared_store_bank_conflict_ways", [])
    out["log2_bank_conflict_ways"] = math.log2(max(1.0, max(ways))) if ways else 0.0
    occ = merged.get("theoretical_occupancy")
    out["theoretical_occupancy"] = min(occ) if occ else 0.0
    regs = merged.get("registers_per_thread")
    out["registers_per_thread"] = max(regs) / 255.0 if regs else 0.0
    out["spills"] = 1.0 if any(v > 0 for v in merged.get("spill_bytes", [])) else 0.0
    out["barriers"] = math.log1p(sum(merged.get("barriers", [])))
    out["divergent_branches"] = math.log1p(sum(merged.get("divergent_branches", [])))
    out["log_flops"] = math.log1p(sum(merged.get("flops", [])))
    ai = merged.get("arithmetic_intensity")
    out["log_arithmetic_intensity"] = math.log1p(max(ai)) if ai else 0.0
    shared = sum(merged.get("shared_mem_static_bytes", [])) + sum(merged.get("shared_mem_dynamic_bytes", []))
    out["log_shared_bytes"] = math.log1p(shared)
    return out


def analysis_features(source: str, task: Any, config: str | None = None, *, gpu: str | None = None
                      ) -> dict[str, float]:
    """Pooled static-analysis features of ``source`` for ``task`` at ``config`` (default: the last,
    largest configuration), from the same host-code interpretation and kernel analysis the cost
    model prices, without compiling or running anything. All zeros (``analysis_available`` 0) when
    the analysis cannot determine the launches."""
    from veriforge.cuda.evaluate.estimate import DEFAULT_GPU
    from veriforge.cuda.evaluate.harness import resolve_task

    spec = resolve_task(task)
    cfg_name = config or (spec.configs[-1].name if spec.configs else None)
    if cfg_name is None:
        return _pool({})
    gpu = gpu or DEFAULT_GPU
    try:
        if spec.family == "c2cuda":
            from veriforge.cuda.evaluate.backend import CCase
            from veriforge.cuda.evaluate.estimate import estimate_candidate
            from veriforge.cuda.tasks.generate import make_case

            case = make_case(spec, cfg_name, 0)  # input data only: the candidate is not run
            est = estimate_candidate(spec, source, [CCase(config=cfg_name, trial=0, args=case.args,
                                                          variables=dict(case.env))], gpu)
        else:
            from veriforge.cuda.evaluate.estimate import estimate_torch_configs

            est = estimate_torch_configs(spec, gpu=gpu, text=source)
        conf = est.configs.get(cfg_name)
    except Exception:  # an analysis failure is "no analysis", never a failed ranking
        return _pool({})
    if conf is None:
        return _pool({})
    return _pool(conf.features)


def static_features(source: str, task: Any = None, config: str | None = None, *,
                    analysis: Mapping[str, Any] | None = None, gpu: str | None = None) -> dict[str, float]:
    """Every feature of :data:`FEATURE_NAMES`: text features, plus analysis features from ``task``
    at ``config`` or from ``analysis`` (an already computed feature dict in the shared vocabulary,
    e.g. a stored evaluation's ``features``). Without either, the analysis part is zeros."""
    out = {f"text.{k}": v for k, v in text_features(source).items()}
    if analysis is not None:
        pooled = _pool(analysis)
    elif task is not None:
        pooled = analysis_features(source, task, config, gpu=gpu)
    else:
        pooled = _pool({})
    out.update({f"analysis.{k}": v for k, v in pooled.items()})
    return out


def feature_vector(features: Mapping[str, float], names: Sequence[str] = FEATURE_NAMES) -> list[float]:
    """``features`` in the order of ``names`` (a missing name is 0)."""
    return [float(features.get(n, 0.0)) for n in names]
