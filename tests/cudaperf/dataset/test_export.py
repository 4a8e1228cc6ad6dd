"""Export: splits as parquet + JSONL loadable by `datasets`, verl RL parquet, datasheet, dataset card, and the
shipped sample."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from veriforge.cudaperf.dataset import build as build_mod
from veriforge.cudaperf.dataset.build import BuildOptions, build
from veriforge.cudaperf.dataset.export import ExportError, export

_spec = importlib.util.spec_from_file_location("cudaperf_toy_families_e", Path(__file__).with_name("toy_families.py"))
toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(toy)

SAMPLE = Path(__file__).resolve().parents[3] / "src" / "veriforge" / "data" / "cudaperf" / "sample"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A toy build with a stand-in verifier (export does not care how rows were verified)."""
    toy.register()
    mp = pytest.MonkeyPatch()
    mp.setattr(build_mod, "verify_task", toy.fake_verify([]))
    try:
        out = tmp_path_factory.mktemp("ds")
        build(BuildOptions(out=out, families=list(toy.NAMES), jobs=1, progress=False, warm=False, seed=5))
        yield out
    finally:
        mp.undo()
        toy.unregister()


def _all_rows(out: Path) -> list[dict]:
    return [json.loads(line) for s in ("train", "validation", "test")
            for line in (out / "data" / f"{s}.jsonl").read_text().splitlines()]


def test_rows_load_with_datasets_parquet_and_json(built):
    import datasets

    rows = _all_rows(built)
    assert {r["id"] for r in rows} == toy.KEPT
    splits = {r["split"] for r in rows}
    files = {s: str(built / "data" / f"{s}.parquet") for s in splits}
    pq = datasets.load_dataset("parquet", data_files=files)
    js = datasets.load_dataset("json", data_files={s: str(built / "data" / f"{s}.jsonl") for s in splits})
    assert sum(len(pq[s]) for s in splits) == sum(len(js[s]) for s in splits) == 3
    row = next(r for s in splits for r in pq[s] if r["id"] == "toy_axpy_a")
    assert row["kind"] == "c2cuda" and row["family"] == "toy_axpy" and row["category"] == "elementwise"
    assert "y[i] = y[i] + alpha * x[i]" in row["reference"]
    assert "y[i] = y[i] + alpha * x[i]" in row["prompt"] and row["messages"][-1]["content"] == row["prompt"]
    assert {c["name"] for c in json.loads(row["configs"])} == {"small", "odd"}
    assert json.loads(row["params"])[0]["name"] == "alpha" and json.loads(row["metrics"])["flops"]
    assert json.loads(row["variant"])["group"] == "a" and row["seed"] == 5 and len(row["content_hash"]) == 64
    impl = row["implementations"][0]
    assert set(impl) >= {"name", "strategy", "quality", "source", "verified", "estimates"}
    assert impl["verified"] and impl["estimates"][0]["provenance"] == "estimated"
    assert impl["estimates"][0]["gpu"] == "H100-SXM" and impl["estimates"][0]["cost_model"] == "fake-model/1"


def test_verl_parquet_matches_the_rl_layout_and_the_reward_ground_truth(built):
    import pyarrow.parquet as pq

    from veriforge.cuda.tasks.load import find_task, load_task

    rows = pq.read_table(built / "verl" / "train.parquet").to_pylist()
    train_ids = {r["id"] for r in _all_rows(built) if r["split"] == "train"}
    assert {r["extra_info"]["task_id"] for r in rows} == train_ids and rows
    for r in rows:
        assert r["data_source"] == "cudaperf" and r["ability"] == "cuda"
        assert r["reward_model"]["style"] == "rule"
        assert [m["role"] for m in r["prompt"]][-1] == "user" and r["prompt"][-1]["content"]
        # compute_score resolves ground_truth with find_task: it must name the task folder
        spec = load_task(find_task(r["reward_model"]["ground_truth"]))
        assert spec.id == r["extra_info"]["task_id"]
    assert (built / "verl" / "test.parquet").is_file()
    export(built, ground_truth_root=".")
    rel = pq.read_table(built / "verl" / "train.parquet").to_pylist()[0]["reward_model"]["ground_truth"]
    assert rel.startswith("./tasks/")


def test_datasheet_stats_and_card(built):
    stats = json.loads((built / "stats.json").read_text())
    assert stats["kept"] == 3 and stats["per_kind"] == {"c2cuda": 2, "torch2cuda": 1}
    assert stats["status"] == {"bundled": 1, "dropped": 1, "duplicate": 2, "kept": 3}
    assert stats["duplicate_rules"] == {"bundled": 1, "exact": 1, "structural": 1}
    assert stats["timing_provenance"] == {"estimated · H100-SXM · fake-model/1": 9}
    assert stats["seed"] == 5 and stats["machine"]["cpus"] >= 1 and stats["build_wall_s"] >= 0
    sheet = (built / "DATASHEET.md").read_text()
    assert "| toy_axpy | 2 | 1 | 2 | 1 | 0 |" in sheet and "estimated" in sheet
    card = (built / "README.md").read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert front["license"] == "apache-2.0" and "cuda" in front["tags"] and front["task_categories"]
    paths = [f["path"] for c in front["configs"] for f in c["data_files"]]
    assert all((built / p).is_file() for p in paths)


def test_reexport_with_another_seed_moves_only_splits(built):
    before = {r["id"]: r["split"] for r in _all_rows(built)}
    export(built, seed=123)
    after = _all_rows(built)
    assert {r["id"] for r in after} == set(before)
    export(built)  # back to the build's seed
    assert {r["id"]: r["split"] for r in _all_rows(built)} == before


def test_export_of_a_folder_without_a_build_is_an_error(tmp_path):
    with pytest.raises(ExportError, match="no build"):
        export(tmp_path)


def test_shipped_sample_loads_and_matches_its_datasheet():
    import datasets

    stats = json.loads((SAMPLE / "stats.json").read_text())
    files = {s: str(SAMPLE / "data" / f"{s}.parquet") for s, n in stats["per_split"].items() if n}
    ds = datasets.load_dataset("parquet", data_files=files)
    rows = [r for s in files for r in ds[s]]
    assert len(rows) == stats["kept"] >= 10
    for s, n in stats["per_split"].items():
        lines = (SAMPLE / "data" / f"{s}.jsonl").read_text().splitlines()
        assert len(lines) == n
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["family"]] = counts.get(r["family"], 0) + 1
        assert all(i["verified"] for i in r["implementations"]) and len(r["implementations"]) >= 3
        assert (SAMPLE / r["task_dir"] / "task.toml").is_file()
    assert counts == stats["per_family"]
    sheet = (SAMPLE / "DATASHEET.md").read_text()
    assert f"kept tasks: **{stats['kept']}**" in sheet
    size = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert size < 1_000_000  # one task per family (21), kept small: it ships in the wheel
