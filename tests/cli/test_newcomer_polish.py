"""What a new user hits first (issue 19, part 10): errors name the user's file, a zero budget is
refused before any work, help has no type placeholders on flags and no swallowed text, and task
ids are printed whole."""

from __future__ import annotations

import re

import pytest
import typer
from rich.text import Text
from typer.testing import CliRunner

from veriforge.cli.main import app
from veriforge.core.sourcefile import read_source
from veriforge.cuda.tasks import find_task
from veriforge.errors import InputFileError

runner = CliRunner()


def test_read_source_names_the_file_and_line(tmp_path):
    path = tmp_path / "k.cu"
    path.write_bytes(b"// ok\n// caf\xe9\n")
    with pytest.raises(InputFileError, match=r"k\.cu:2: not UTF-8 text \(byte 0xe9"):
        read_source(path)
    with pytest.raises(InputFileError, match="no such file"):
        read_source(tmp_path / "missing.cu")


@pytest.mark.parametrize("argv", [
    ["optimize", "bad.cu", "--task", "c2cuda/vector_add"],
    ["optimize", "bad.cu", "--kernel", "k", "--grid", "1", "--block", "1"],
    ["eval", "c2cuda/vector_add", "bad.cu"],
])
def test_non_utf8_input_is_one_line_naming_the_file(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.cu").write_bytes(b"\xff\xfe__global__ void k(float* a) { a[0] = 1; }\n")
    res = runner.invoke(app, argv)
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)  # no traceback
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert errors == ["error: bad.cu:1: not UTF-8 text (byte 0xff at offset 0); save the file as UTF-8"]


def test_compile_errors_name_the_users_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = (find_task("c2cuda/vector_add") / "impls" / "naive.cu").read_text()
    lines = src.splitlines()
    at = next(i for i, line in enumerate(lines) if "blockIdx.x" in line)
    lines[at] += " int oops = undefined_thing;"
    (tmp_path / "my_add.cu").write_text("\n".join(lines) + "\n")
    for _ in range(2):  # fresh, then from the run store's cache: the same name either way
        res = runner.invoke(app, ["eval", "c2cuda/vector_add", "my_add.cu"])
        assert res.exit_code == 1, res.output
        assert f"my_add.cu:{at + 1}:" in res.output and "candidate.cu" not in res.output
    res = runner.invoke(app, ["optimize", "my_add.cu", "--task", "c2cuda/vector_add", "-q", "--budget", "2"])
    assert res.exit_code == 2
    assert f"my_add.cu:{at + 1}:" in res.output and "candidate.cu" not in res.output


@pytest.mark.parametrize("argv", [["optimize", "c2cuda/vector_add", "--budget", "0"],
                                  ["generate", "vector_add", "--budget", "0"]])
def test_zero_budget_is_refused_before_anything_starts(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, argv)
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "--budget" in text and "0/None" not in text and "max_evaluations" not in text
    assert not (tmp_path / "optiml-out").exists()


def _commands(group: typer.Typer) -> list[list[str]]:
    """Every leaf command path of the app (``["cuda", "run"]``, ``["optimize"]``, ...)."""
    from typer.main import get_command

    out: list[list[str]] = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        else:
            out.append(path)

    walk(get_command(group), [])
    return out


def test_help_has_no_type_placeholder_on_flags_and_loses_no_text():
    from typer.main import get_command

    root = get_command(app)
    commands = _commands(app)
    assert len(commands) > 20
    for path in commands:
        res = runner.invoke(app, [*path, "--help"], terminal_width=200)
        assert res.exit_code == 0, (path, res.output)
        assert "<bool>" not in res.output, path
        cmd = root
        for name in path:
            cmd = cmd.commands[name]
        for param in cmd.params:
            text = getattr(param, "help", None) or ""
            # Help is rendered as rich markup: "[llm] model" would print as " model".
            assert Text.from_markup(text).plain == text, (path, param.name, text)
    assert re.search(r"--json\s+Print", runner.invoke(app, ["doctor", "--help"], terminal_width=200).output)


def test_tasks_list_never_truncates_ids(monkeypatch):
    ids = [p.name for p in find_task("c2cuda/vector_add").parent.iterdir() if (p / "task.toml").is_file()]
    longest = max(ids, key=len)
    for width in ("60", "80", "200"):
        monkeypatch.setenv("COLUMNS", width)
        res = runner.invoke(app, ["tasks", "list"])
        assert res.exit_code == 0
        assert "…" not in res.output
        assert re.search(rf"^{re.escape(longest)}\t", res.output, re.M), width


def test_tasks_list_table_on_a_terminal_keeps_ids_whole(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich treats the output as a terminal
    monkeypatch.setenv("COLUMNS", "110")
    res = runner.invoke(app, ["tasks", "list"])
    plain = re.sub(r"\x1b\[[0-9;]*m", "", res.output)
    assert "┃ id" in plain and "…" not in plain
    shown = set(re.findall(r"^│ (\S+)", plain, re.M))
    ids = {p.name for fam in ("c2cuda", "torch2cuda")
           for p in find_task("c2cuda/vector_add").parent.parent.joinpath(fam).iterdir() if (p / "task.toml").is_file()}
    assert ids <= shown


def test_compile_errors_of_an_own_kernel_name_the_users_file(tmp_path, monkeypatch):
    """With --kernel the original is the reference (written as reference.cu): still the user's name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.cu").write_text("#include <no_such_header.h>\n"
                                      "__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n")
    res = runner.invoke(app, ["optimize", "mine.cu", "--kernel", "k", "--grid", "1", "--block", "32",
                              "--size", "a=32", "-q", "--budget", "2"])
    assert res.exit_code == 2
    assert "mine.cu:1:" in res.output and "reference.cu" not in res.output


def test_eval_takes_the_family_of_the_candidates_file_for_an_id_in_several_families(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERIFORGE_STORE__PATH", str(tmp_path / "runs.sqlite"))
    (tmp_path / "my_gemv.cu").write_text((find_task("c2cuda/gemv") / "impls" / "naive.cu").read_text())
    res = runner.invoke(app, ["eval", "gemv", "my_gemv.cu"])
    assert res.exit_code == 0, res.output
    assert "task gemv: using c2cuda/gemv (my_gemv.cu is a .cu candidate)" in res.output
    assert "several families" not in res.output
