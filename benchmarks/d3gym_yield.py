"""D3-Gym yield on real repositories: validated tasks per repository, and why the rest were lost.

    python benchmarks/d3gym_yield.py REPO_DIR [REPO_DIR ...] [--out DIR] [--env-mode install]

Each REPO_DIR is a local clone of a public research repository (clone them yourself; nothing is
fetched here). For each one this runs ``veriforge d3gym build`` (environments of the repository's
era in ``install`` mode: needs the package index at build time) and ``veriforge d3gym validate``,
and prints one row: candidates mined, tasks built, tasks whose evaluator validates, seconds, the
era date, and the most common skip reasons. The last line is the average of validated tasks per
repository -- the figure to compare with the D3-Gym paper's 2.4 (565 tasks from 239 repositories).
Results of a run on 13 repositories are in benchmarks/results/d3gym_yield.txt.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path


def _reason_class(reason: str) -> str:
    """A skip reason without its file-specific tail (``imports repository-local module(s) X`` -> prefix)."""
    for sep in (" (", ": ", " X", " line"):
        if sep in reason:
            reason = reason.split(sep, 1)[0]
    return reason.strip()


def survey(repo: Path, out: Path, env_mode: str, timeout: int) -> dict:
    dest = out / repo.name
    started = time.monotonic()
    cmd = [sys.executable, "-m", "veriforge", "d3gym", "build", str(repo), "--out", str(dest), "--env-mode", env_mode]
    try:
        rc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:  # the run store keeps what finished; the report may be partial
        rc = "timeout"
    seconds = time.monotonic() - started
    report = dest / "d3gym_build.json"
    data = json.loads(report.read_text()) if report.is_file() else {}
    summary = data.get("summary", {})
    validated = 0
    if summary.get("tasks_built"):
        val = subprocess.run([sys.executable, "-m", "veriforge", "d3gym", "validate", str(dest)],
                             capture_output=True, text=True, timeout=timeout)
        validated = sum(1 for line in val.stdout.splitlines() if line.startswith("ok "))
    eras = set()
    for t in data.get("tasks", []):
        task_json = Path(t.get("task_dir") or "") / "task.json"
        if task_json.is_file():
            era = (json.loads(task_json.read_text()).get("veriforge") or {}).get("era") or {}
            eras.add(str((era.get("era") or {}).get("date", ""))[:10])
    eras.discard("")
    reasons = Counter(_reason_class(s["reason"]) for s in data.get("skipped", []))
    return {"repo": repo.name, "mined": summary.get("candidates_mined", 0), "built": summary.get("tasks_built", 0),
            "validated": validated, "seconds": round(seconds), "era": ",".join(eras) or "-",
            "skips": reasons.most_common(3), "rc": rc}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("d3gym-yield"))
    parser.add_argument("--env-mode", default="install", choices=["install", "reuse"])
    parser.add_argument("--timeout", type=int, default=1200)
    args = parser.parse_args()
    print(f"{'repository':<26} {'mined':>5} {'built':>5} {'valid':>5} {'s':>5} {'era':>10}  top skip reasons")
    rows = []
    for repo in args.repos:  # a row as each repository finishes: the survey takes long
        r = survey(repo, args.out, args.env_mode, args.timeout)
        rows.append(r)
        skips = "; ".join(f"{n}x {why}" for why, n in r["skips"])
        late = "" if r["rc"] != "timeout" else "  (build timed out)"
        print(f"{r['repo']:<26} {r['mined']:>5} {r['built']:>5} {r['validated']:>5} {r['seconds']:>5} {r['era']:>10}  "
              f"{skips}{late}", flush=True)
    total = sum(r["validated"] for r in rows)
    print(f"\n{total} validated task(s) from {len(rows)} repositories: {total / len(rows):.2f} per repository")


if __name__ == "__main__":
    main()
