"""Inputs outside a sandboxed program's working directory: lent read-only with ``data=`` (run_program,
Project, ``veriforge cuda run --data``) or automatically when an argument names them
(veriforge/cuda/cpu/data.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from veriforge.cuda import cpu
from veriforge.cuda.cpu.data import argument_paths, exposed_inputs, resolve_data

READER = r"""
#include <cstdio>
int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "../../data/in.txt";
    FILE* f = fopen(path, "r");
    if (!f) { printf("cannot open %s\n", path); return 1; }
    char buf[64] = {0};
    fgets(buf, sizeof buf, f);
    fclose(f);
    FILE* w = fopen(argc > 2 ? argv[2] : "../../data/in.txt", "a");
    FILE* o = fopen("out.txt", "w");
    printf("read %s write-data %s write-cwd %s\n", buf, w ? "yes" : "no", o ? "yes" : "no");
    return 0;
}
"""


@pytest.fixture
def layout():
    """TMP/data/in.txt and the working directory TMP/a/b (in the system temp dir, reachable and
    readable by the sandbox's per-run uid)."""
    tmp_path = Path(tempfile.mkdtemp(prefix="vf-data-test-"))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("hello")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    for p in (tmp_path, tmp_path / "a", tmp_path / "data", work):
        os.chmod(p, 0o777)
    os.chmod(tmp_path / "data" / "in.txt", 0o644)
    yield tmp_path, work
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_resolving_and_argument_paths(layout):
    root, work = layout
    assert resolve_data(["../../data"], work) == [str(root / "data")]
    with pytest.raises(ValueError, match="does not exist"):
        resolve_data(["../../nope"], work)
    home = Path(os.environ["VERIFORGE_HOME"])
    with pytest.raises(ValueError, match="veriforge's home"):
        resolve_data([str(home)], work)
    args = ["-n=3", "../../data/in.txt", "--input=../../data", "missing.txt", str(home), "-v"]
    assert argument_paths(args, work) == [str(root / "data" / "in.txt"), str(root / "data")]
    assert argument_paths(["../../data/in.txt", str(root / "data")], None) == [str(root / "data")]
    (work / "mine.txt").write_text("x")
    assert exposed_inputs([], ["mine.txt", "../../data/in.txt"], work) == (str(root / "data" / "in.txt"),)


def test_data_outside_the_working_directory_is_lent_read_only(layout):
    root, work = layout
    blind = cpu.run_program(READER, cwd=work)
    assert blind.returncode == 1 and "cannot open ../../data/in.txt" in blind.stdout
    res = cpu.run_program(READER, cwd=work, data=["../../data"])
    assert res.returncode == 0, res.stderr
    assert res.stdout == "read hello write-data no write-cwd yes\n"   # read-only; the cwd stays writable
    assert (root / "data" / "in.txt").read_text() == "hello"


def test_arguments_naming_existing_paths_are_lent_automatically(layout):
    root, work = layout
    res = cpu.run_program(READER, argv=[str(root / "data" / "in.txt")], cwd=work)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("read hello write-data no")
    # a project's own data, relative to its root
    (work / "r.cu").write_text(READER)
    proj = cpu.Project(files=["r.cu"], root=work, data=["../../data/in.txt"])
    assert proj.data == [root / "data" / "in.txt"]
    assert cpu.run_program(proj, cwd=work).stdout.startswith("read hello")


def test_cli_data_option(layout, monkeypatch):
    from typer.testing import CliRunner

    from veriforge.cli.cuda import app

    _root, work = layout
    monkeypatch.chdir(work)
    (work / "r.cu").write_text(READER)
    blind = CliRunner().invoke(app, ["run", "r.cu"])
    assert blind.exit_code == 1 and "cannot open" in blind.stdout
    res = CliRunner().invoke(app, ["run", "--data", "../../data", "r.cu"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("read hello write-data no")
