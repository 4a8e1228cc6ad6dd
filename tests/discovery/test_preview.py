"""Dataset previews in ScienceAgentBench's framing, for each supported format."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
from PIL import Image

from veriforge.discovery.preview import dataset_preview, folder_tree, preview_dataset


def _framed(text: str, label: str) -> str:
    assert text.startswith(f"[START Preview of {label}]\n") and text.endswith(f"\n[END Preview of {label}]")
    return text.split("\n", 1)[1].rsplit("\n", 1)[0]


def test_csv_and_tsv_heads_with_shape(tmp_path: Path):
    p = tmp_path / "cells.csv"
    p.write_text("cell,area,group\n" + "".join(f"c{i},{i * 1.5},{'ab'[i % 2]}\n" for i in range(20)))
    body = _framed(preview_dataset(p, root=tmp_path), "cells.csv")
    lines = body.splitlines()
    assert lines[:3] == ["cell,area,group", "c0,0.0,a", "c1,1.5,b"] and "c5,7.5,b" not in body
    assert "(20 data rows, 3 columns: cell, area, group)" in body
    t = tmp_path / "x.tsv"
    t.write_text("a\tb\n1\t2\n")
    assert "(1 data rows, 2 columns: a, b)" in preview_dataset(t)


def test_json_structure(tmp_path: Path):
    p = tmp_path / "params.json"
    p.write_text(json.dumps({"alpha": 0.2, "runs": [{"id": 1, "ok": True}] * 3, "name": "x" * 500}))
    body = _framed(preview_dataset(p), "params.json")
    assert "object with 3 keys" in body and "'alpha': float = 0.2" in body
    assert "'runs': list of 3" in body and "'id': int = 1" in body
    assert len(body) < 400  # long strings truncated


def test_numpy_npy_npz(tmp_path: Path):
    np.save(tmp_path / "a.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
    np.savez(tmp_path / "b.npz", u=np.zeros((2, 2)), labels=np.array([1, 2, 3]))
    a = preview_dataset(tmp_path / "a.npy")
    assert "shape=(3, 4), dtype=float32" in a and "0., 1., 2." in a.replace(" ", " ")
    b = preview_dataset(tmp_path / "b.npz")
    assert "2 arrays" in b and "u: shape=(2, 2), dtype=float64" in b and "labels: shape=(3,)" in b
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object))
    assert "not loaded" in preview_dataset(tmp_path / "o.npy")


def test_image_text_binary_empty_hdf5_excel(tmp_path: Path):
    Image.new("RGB", (64, 32)).save(tmp_path / "img.png")
    assert "format=PNG, size=64x32 pixels, mode=RGB" in preview_dataset(tmp_path / "img.png")
    (tmp_path / "notes.txt").write_text("".join(f"line {i}\n" for i in range(30)))
    txt = preview_dataset(tmp_path / "notes.txt")
    assert "line 9" in txt and "line 10" not in txt and "(30 lines)" in txt
    (tmp_path / "m.dat").write_text("1.0 2.0 3.0\n4.0 5.0 6.0\n")
    assert "numeric matrix: 2 rows x 3 columns" in preview_dataset(tmp_path / "m.dat")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 8)
    assert "binary file" in preview_dataset(tmp_path / "blob.bin") and "2.0 KB" in preview_dataset(
        tmp_path / "blob.bin"
    )
    (tmp_path / "e.csv").write_text("")
    assert "(empty file)" in preview_dataset(tmp_path / "e.csv")
    (tmp_path / "d.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(100))
    h5 = preview_dataset(tmp_path / "d.h5")
    if importlib.util.find_spec("h5py") is None:
        assert "h5py is not installed" in h5
    (tmp_path / "w.xlsx").write_bytes(b"PK\x03\x04" + bytes(50))
    xl = preview_dataset(tmp_path / "w.xlsx")
    if importlib.util.find_spec("openpyxl") is None:
        assert "openpyxl is not installed" in xl
    else:
        assert "could not be previewed" in xl  # a corrupt workbook is a note, not a traceback


def test_dataset_preview_order_cap_and_tree(tmp_path: Path):
    d = tmp_path / "datasets"
    (d / "sub").mkdir(parents=True)
    (d / "b.csv").write_text("x\n1\n")
    (d / "a.txt").write_text("hello\n")
    (d / "sub" / "c.json").write_text("[1, 2]")
    (d / ".hidden").write_text("secret")
    text = dataset_preview(d)
    labels = [line for line in text.splitlines() if line.startswith("[START")]
    assert labels == [
        "[START Preview of datasets/a.txt]",
        "[START Preview of datasets/b.csv]",
        "[START Preview of datasets/sub/c.json]",
    ]
    assert "secret" not in text
    capped = dataset_preview(d, max_chars=120)
    assert "[START Preview of datasets/a.txt]" in capped
    assert "not previewed" in capped and "datasets/sub/c.json" in capped.splitlines()[-1]
    assert folder_tree(d) == "|-- datasets/\n|---- sub/\n|------ c.json\n|---- a.txt\n|---- b.csv"
