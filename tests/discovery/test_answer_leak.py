"""A task whose answer is one of its inputs (the program re-derives a file the repository holds) is
rejected at the gold stage with the pair named; a real analysis of the same data is built."""

from __future__ import annotations

from pathlib import Path

from veriforge.discovery.build import answers_in_datasets


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_answers_in_datasets_ignores_line_ends_and_small_files(tmp_path):
    _write(tmp_path, "datasets/data/clean.csv", "group,value\r\na,1.0  \r\nb,2.0\r\n")
    _write(tmp_path, "datasets/data/raw.csv", "group,value\na,1.0\nb,2.0\nb,\n")
    _write(tmp_path, "gold_results/clean.csv", "group,value\na,1.0\nb,2.0\n")
    _write(tmp_path, "gold_results/n.txt", "2\n")  # tiny outputs coincide by chance: not evidence
    _write(tmp_path, "gold_results/sums.csv", "group,value\na,1.0\nb,3.0\n")
    assert answers_in_datasets(tmp_path) == [("pred_results/clean.csv", "data/clean.csv")]


def test_a_program_that_re_derives_a_committed_file_is_rejected(tmp_path, build_repo):
    repo = tmp_path / "repo"
    _write(repo, "data/raw.csv", "group,value\na,1.0\nb,2.0\nb,\n")
    _write(repo, "data/clean.csv", "group,value\na,1.0\nb,2.0\n")  # committed by the author
    # globs the data folder (so it is the dataset, committed clean.csv included) and re-derives clean.csv
    _write(repo, "clean.py", "import glob\nimport pandas as pd\n"
           "raw = pd.concat([pd.read_csv(f) for f in sorted(glob.glob('data/raw*.csv'))])\n"
           "raw.dropna().to_csv('results/clean.csv', index=False)\n")
    _write(repo, "sums.py", "import pandas as pd\n"
           "pd.read_csv('data/raw.csv').groupby('group').value.sum().to_csv('out/sums.csv')\n")
    report = build_repo(repo)
    by = {t.source: t for t in report.tasks}
    assert by["sums.py"].status == "built", by["sums.py"].reason
    bad = by["clean.py"]
    assert (bad.status, bad.failed_stage) == ("failed", "gold")
    assert "the answer is among the inputs" in bad.reason and "datasets/data/clean.csv" in bad.reason
    assert report.summary()["failures"]["by_reason"].get("gold/answer-in-datasets") == 1
