"""Export a built dataset folder: splits (JSONL + parquet), verl RL parquet, datasheet, dataset card.

Layout written under the build folder ``DIR`` (docs/cudaperf-dataset.md has every column)::

    DIR/data/{train,validation,test}.{jsonl,parquet}   one row per kept task
    DIR/verl/{train,test}.parquet                       verl's RL-dataset layout (test = our validation split)
    DIR/DATASHEET.md, DIR/stats.json                    counts, drops, duplicates, timing provenance, machine
    DIR/README.md                                       Hugging Face dataset card (YAML front matter)

Why free-form tables (configs, params, metrics, tolerance, variant) are JSON *strings*: their keys
differ from task to task (config variables are named by the task), and Arrow needs one schema per
column; as strings every file loads with ``datasets.load_dataset("parquet"|"json", ...)`` and
``json.loads`` gives the table back exactly. Implementations have a fixed schema and stay nested.

Everything comes from the run store of the build (``DIR/build.sqlite``): export is repeatable and
needs no family code, so a dataset can be re-exported (another split seed, another ground-truth
root) without regenerating or re-verifying anything.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from veriforge.errors import VeriforgeError

from .split import SPLITS, assert_no_bundled, assign

__all__ = ["ExportError", "export", "row_schema", "verl_schema"]


class ExportError(VeriforgeError, ValueError):
    """The folder holds no build, or a row would break the export's guarantees."""


def row_schema() -> Any:
    """The Arrow schema of ``data/*.parquet`` (also the JSONL rows' shape)."""
    import pyarrow as pa

    estimate = pa.struct([("config", pa.string()), ("time_s", pa.float64()), ("provenance", pa.string()),
                          ("gpu", pa.string()), ("cost_model", pa.string()), ("status", pa.string())])
    impl = pa.struct([("name", pa.string()), ("strategy", pa.string()), ("quality", pa.int64()),
                      ("description", pa.string()), ("source", pa.string()), ("verified", pa.bool_()),
                      ("estimates", pa.list_(estimate))])
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    s = pa.string()
    return pa.schema([("id", s), ("kind", s), ("family", s), ("category", s), ("title", s), ("description", s),
                      ("prompt", s), ("messages", pa.list_(message)), ("reference", s), ("configs", s),
                      ("timing", s), ("params", s), ("implementations", pa.list_(impl)), ("metrics", s),
                      ("tolerance", s),
                      ("variant", s), ("tags", pa.list_(s)), ("seed", pa.int64()), ("content_hash", s),
                      ("task_dir", s), ("split", s)])


def verl_schema() -> Any:
    """verl's RL dataset columns: data_source, prompt (chat), ability, reward_model, extra_info."""
    import pyarrow as pa

    s = pa.string()
    return pa.schema([
        ("data_source", s), ("prompt", pa.list_(pa.struct([("role", s), ("content", s)]))), ("ability", s),
        ("reward_model", pa.struct([("style", s), ("ground_truth", s)])),
        ("extra_info", pa.struct([("split", s), ("index", pa.int64()), ("task_id", s), ("family", s), ("kind", s),
                                  ("category", s), ("task_dir", s)])),
    ])


def _write_parquet(rows: list[dict[str, Any]], schema: Any, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path)


def _write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for row in rows:
            fh.write(json.dumps(row, sort_keys=True) + "\n")


def export(out: str | Path, *, seed: int | None = None, split_by: str | None = None,
           ground_truth_root: str | None = None) -> dict[str, Any]:
    """Write every export of the build in ``out``; returns the stats (also ``stats.json``).

    ``seed``/``split_by`` default to the build's; ``ground_truth_root`` is the folder prefix that
    verl's ``reward_model.ground_truth`` gets (default: the absolute path of ``out``; give ``"."``
    for paths relative to the dataset folder, e.g. for a dataset that will be moved).
    """
    from veriforge.core.store import RunStore

    from .build import META, NAMESPACE, RUN_KIND, machine

    out = Path(out)
    if not (out / "build.sqlite").is_file():
        raise ExportError(f"{out} holds no build (no build.sqlite); run `veriforge cudaperf dataset build --out "
                          f"{out}` first")
    store = RunStore(out / "build.sqlite")
    meta = store.get_record(META, "build") or {}
    seed = int(meta.get("seed", 0) if seed is None else seed)
    split_by = str(meta.get("split_by", "group") if split_by is None else split_by)
    records = [{**r.value, "content_hash": r.key} for r in store.records(NAMESPACE)]
    kept = sorted((r["row"] for r in records if r.get("status") == "kept"), key=lambda r: (r["family"], r["id"]))
    assert_no_bundled(kept)
    splits = assign(kept, seed, by=split_by)
    for name, rows in splits.items():
        for row in rows:
            row["split"] = name
        _write_jsonl(rows, out / "data" / f"{name}.jsonl")
        _write_parquet(rows, row_schema(), out / "data" / f"{name}.parquet")

    root = str(out.resolve()) if ground_truth_root is None else ground_truth_root.rstrip("/")
    for verl_name, split in (("train", "train"), ("test", "validation")):
        verl_rows = [{
            "data_source": "cudaperf", "prompt": row["messages"], "ability": "cuda",
            "reward_model": {"style": "rule", "ground_truth": f"{root}/{row['task_dir']}"},
            "extra_info": {"split": split, "index": k, "task_id": row["id"], "family": row["family"],
                           "kind": row["kind"], "category": row["category"], "task_dir": row["task_dir"]},
        } for k, row in enumerate(splits[split])]
        _write_parquet(verl_rows, verl_schema(), out / "verl" / f"{verl_name}.parquet")

    runs = store.list_runs(RUN_KIND)
    wall = sum(float((r.summary or {}).get("wall_s", 0.0)) for r in runs)
    stats = _stats(records, splits, seed, split_by, meta, wall, len(runs), machine())
    (out / "stats.json").write_text(json.dumps(stats, indent=2, sort_keys=True) + "\n")
    (out / "DATASHEET.md").write_text(_datasheet(stats))
    (out / "README.md").write_text(_card(stats, splits))
    return stats


def _stats(records: list[dict[str, Any]], splits: dict[str, list[dict[str, Any]]], seed: int, split_by: str,
           meta: dict[str, Any], wall: float, runs: int, mach: dict[str, Any]) -> dict[str, Any]:
    status_by_family: dict[str, Counter[str]] = defaultdict(Counter)
    dup_rules: Counter[str] = Counter()
    drop_reasons: Counter[str] = Counter()
    for r in records:
        status_by_family[r.get("family", "?")][r.get("status", "?")] += 1
        if r.get("status") in ("duplicate", "bundled"):
            dup_rules[r.get("rule", "?")] += 1
        elif r.get("status") in ("dropped", "malformed"):
            drop_reasons[_reason_class(str(r.get("reason", "")))] += 1
    kept_rows = [row for rows in splits.values() for row in rows]
    per = {key: dict(sorted(Counter(row[key] for row in kept_rows).items())) for key in ("family", "category", "kind")}
    per_split = {s: len(rows) for s, rows in splits.items()}
    per_family_split = {f: {s: sum(1 for r in splits[s] if r["family"] == f) for s in SPLITS}
                        for f in per["family"]}
    provenance: Counter[str] = Counter()
    unknown = 0
    impls = 0
    verified = 0
    strategies: Counter[str] = Counter()
    for row in kept_rows:
        for impl in row["implementations"]:
            impls += 1
            verified += bool(impl["verified"])
            strategies[impl["strategy"]] += 1
            for e in impl["estimates"]:
                if e.get("time_s") is None:
                    unknown += 1
                else:
                    provenance[f"{e['provenance']} · {e.get('gpu')} · {e.get('cost_model')}"] += 1
    return {
        "kept": len(kept_rows), "per_split": per_split, "per_family": per["family"], "per_category": per["category"],
        "per_kind": per["kind"], "per_family_split": per_family_split,
        "status_by_family": {f: dict(sorted(c.items())) for f, c in sorted(status_by_family.items())},
        "status": dict(sorted(Counter(r.get("status", "?") for r in records).items())),
        "duplicate_rules": dict(sorted(dup_rules.items())), "drop_reasons": dict(drop_reasons.most_common(20)),
        "implementations": impls, "implementations_verified": verified, "strategies": dict(sorted(strategies.items())),
        "timing_provenance": dict(sorted(provenance.items())), "timings_unknown": unknown,
        "estimated": bool(meta.get("estimate", True)),
        "seed": seed, "split_by": split_by, "dedup": meta.get("dedup", "near"),
        "near_threshold": meta.get("near_threshold"), "build_wall_s": round(wall, 2), "build_runs": runs,
        "machine": mach, "exported": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _reason_class(reason: str) -> str:
    """A short class of a drop reason (the datasheet counts classes, not every message)."""
    text = reason.split(";")[0]
    for marker in ("needs at least", "implementations need distinct", "parameter", "config ", "metrics",
                   "verification job failed", "family "):
        if marker in text:
            return text[: text.find(marker) + len(marker)].strip() + " …"
    head = text.split(":")[0:2]
    return ":".join(head).strip()[:80] or "not verified"


def _table(title: str, mapping: dict[str, Any], key: str = "", value: str = "tasks") -> list[str]:
    lines = [f"### {title}", "", f"| {key or 'name'} | {value} |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in mapping.items()] or ["| (none) | 0 |"]
    return [*lines, ""]


def _datasheet(st: dict[str, Any]) -> str:
    lines = ["# CudaPerf dataset — datasheet", "",
             "Generated C→CUDA and PyTorch→CUDA tasks (veriforge `cudaperf dataset build`). Every kept task has "
             "every implementation verified on veriforge's CPU CUDA runtime on every configuration "
             "(harness verdict, anti-cheat on). The 63 bundled hand-written tasks are the curated evaluation "
             "set and are not in any split.", "",
             f"- kept tasks: **{st['kept']}** ({', '.join(f'{k}: {v}' for k, v in st['per_split'].items())})",
             f"- implementations: {st['implementations']} ({st['implementations_verified']} verified)",
             f"- generation seed: {st['seed']}; split rule: by {st['split_by']} (sha256 of seed and unit; "
             "80/10/10)",
             f"- dedup: {st['dedup']} (near threshold {st['near_threshold']})",
             f"- build wall time: {st['build_wall_s']} s over {st['build_runs']} run(s) "
             f"(measured on this machine: {st['machine']['processor']}, {st['machine']['cpus']} CPUs, "
             f"{st['machine']['platform']})",
             f"- exported: {st['exported']}", ""]
    lines += _table("Per kind", st["per_kind"], "kind")
    lines += _table("Per family", st["per_family"], "family")
    lines += _table("Per category", st["per_category"], "category")
    lines += ["### Per family and split", "", "| family | train | validation | test |", "|---|---:|---:|---:|"]
    lines += [f"| {f} | {c['train']} | {c['validation']} | {c['test']} |" for f, c in st["per_family_split"].items()]
    lines += ["", "### Build outcomes per family", "",
              "Statuses: kept (every implementation verified), dropped (failed verification), duplicate, "
              "bundled (reproduces a curated bundled task), malformed (schema or labelling error).", "",
              "| family | kept | dropped | duplicate | bundled | malformed |", "|---|---:|---:|---:|---:|---:|"]
    for fam, c in st["status_by_family"].items():
        lines.append(f"| {fam} | {c.get('kept', 0)} | {c.get('dropped', 0)} | {c.get('duplicate', 0)} | "
                     f"{c.get('bundled', 0)} | {c.get('malformed', 0)} |")
    lines += [""]
    lines += _table("Duplicates by rule", st["duplicate_rules"], "rule")
    lines += _table("Drop reasons", st["drop_reasons"], "reason")
    lines += _table("Strategies", st["strategies"], "strategy", "implementations")
    lines += ["### Provenance of timings", "",
              "Every time in the dataset is **estimated** by veriforge's analytic cost model for the named GPU "
              "(never measured on a GPU in this build). Each estimate row carries its provenance, GPU and "
              "cost-model version; unknown times (the model could not complete a configuration) are null."
              if st["estimated"] else "This build ran with --no-estimate: the dataset carries no timings.", ""]
    lines += _table("Timings", st["timing_provenance"], "provenance · gpu · cost model", "estimates")
    lines += [f"Unknown (null) estimates: {st['timings_unknown']}", ""]
    return "\n".join(lines)


def _card(st: dict[str, Any], splits: dict[str, list[dict[str, Any]]]) -> str:
    n = st["kept"]
    size = "n<1K" if n < 1000 else "1K<n<10K" if n < 10000 else "10K<n<100K"
    present = [s for s in SPLITS if splits[s]]
    data_files = "\n".join(f"  - split: {s}\n    path: data/{s}.parquet" for s in present)
    verl_files = "\n".join(f"  - split: {name}\n    path: verl/{name}.parquet"
                           for name, s in (("train", "train"), ("test", "validation")) if splits[s])
    front = ["---", "license: apache-2.0", "task_categories:", "- text-generation", "language:", "- en",
             "tags:", "- cuda", "- code", "- code-generation", "- gpu", "- performance", "- reinforcement-learning",
             "pretty_name: CudaPerf generated CUDA tasks", "size_categories:", f"- {size}", "configs:",
             "- config_name: default", "  data_files:", data_files or "  - split: train\n    path: data/train.parquet"]
    if verl_files:
        front += ["- config_name: verl", "  data_files:", verl_files]
    front += ["---", ""]
    body = [
        "# CudaPerf generated CUDA tasks", "",
        f"{n} tasks ({', '.join(f'{k}: {v}' for k, v in st['per_kind'].items()) or 'none'}), each with "
        "several input configurations and several CUDA implementations of different optimisation strategies, "
        "every implementation verified on veriforge's CPU CUDA runtime. Timings are cost-model **estimates** "
        "with their provenance (GPU, model version), not GPU measurements.", "",
        "```python", "from datasets import load_dataset",
        "ds = load_dataset(\"parquet\", data_files={\"train\": \"data/train.parquet\", "
        "\"test\": \"data/test.parquet\"})", "import json; configs = json.loads(ds[\"train\"][0][\"configs\"])",
        "```", "",
        "Columns: id, kind, family, category, title, description, prompt, messages, reference, configs (JSON), "
        "params (JSON), implementations (name, strategy, quality, description, source, verified, estimates), "
        "metrics (JSON), tolerance (JSON), variant (JSON), tags, seed, content_hash, task_dir, split. "
        "`verl/*.parquet` follows verl's RL dataset layout; its reward is "
        "`veriforge.cudaperf.reward.compute_score` (ground_truth = the task folder).", "",
        f"Splits are assigned by {st['split_by']} and seed hash (seed {st['seed']}); see DATASHEET.md for counts, "
        "drops, duplicates and the provenance of every timing.", ""]
    return "\n".join(front + body)
