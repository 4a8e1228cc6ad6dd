"""nvcc error/warning logs (recorded from real runs) → diagnostics at the user's file, line and column."""

from __future__ import annotations

from pathlib import Path

from veriforge.cuda.toolchain.diagnostics import (
    Diagnostic,
    NvccCompileError,
    PathMap,
    error_summary,
    parse_nvcc_log,
    remap_log,
)
from veriforge.errors import CompileError

DATA = Path(__file__).parent / "data"


def paths_for(fixture: str, compiled_as: str, user_file: str) -> tuple[str, PathMap]:
    source = (DATA / f"{fixture}.cu").read_text()
    pm = PathMap(
        user_file=user_file, aliases=(compiled_as, f"/tmp/xyz/{compiled_as}"), source_lines=source.splitlines()
    )
    return (DATA / f"{fixture}.log").read_text(), pm


def test_frontend_errors_and_warnings_with_columns_in_the_original_source():
    log, pm = paths_for("diag_errors", "bad.cu", "src/kernels/bad.cu")
    diags = parse_nvcc_log(log, pm)
    assert [(d.severity, d.line, d.column) for d in diags] == [
        ("error", 8, 57),  # echoed line says __attribute__((global)); column is in the user's text
        ("warning", 9, 35),
        ("error", 6, 14),
        ("warning", 4, 9),
    ]
    assert all(d.file == "src/kernels/bad.cu" for d in diags)
    src = (DATA / "diag_errors.cu").read_text().splitlines()
    assert src[7][56:].startswith("missing_fn")
    assert src[5][13:].startswith("undefined_thing")
    assert diags[0].message == 'identifier "missing_fn" is undefined'
    assert diags[1].code == "549-D"
    assert str(diags[0]) == 'src/kernels/bad.cu:8:57: error: identifier "missing_fn" is undefined'


def test_template_instantiation_notes_are_kept_and_remapped():
    log, pm = paths_for("diag_template", "tpl.cu", "my/tpl.cu")
    (d,) = parse_nvcc_log(log, pm)
    assert (d.file, d.line, d.column, d.severity) == ("my/tpl.cu", 2, 38, "error")
    assert d.notes and "detected during instantiation" in d.notes[0] and "T=float" in d.notes[0]


def test_preprocessor_errors_in_gcc_format():
    log, pm = paths_for("diag_missing_header", "mh.cu", "/home/u/mh.cu")
    (d,) = parse_nvcc_log(log, pm)
    assert (d.file, d.line, d.column, d.severity) == ("/home/u/mh.cu", 2, 10, "error")
    assert "nothere.h" in d.message


def test_ptxas_errors_are_demangled_and_pinned_to_the_kernel_definition():
    log, pm = paths_for("diag_ptxas_smem", "warn.cu", "w.cu")
    diags = parse_nvcc_log(log, pm, {"_Z3bigPf": "big(float*)"})
    err = [d for d in diags if d.severity == "error"]
    assert len(err) == 1
    assert err[0].file == "w.cu" and err[0].line == 5
    assert "'big(float*)' uses too much shared data" in err[0].message
    assert err[0].message.startswith("ptxas: ")


def test_nvcc_fatal_without_position():
    pm = PathMap(user_file="a.cu", aliases=("a.cu",))
    (d,) = parse_nvcc_log("nvcc fatal   : Unknown option '-foo'\n", pm)
    assert (d.file, d.line, d.severity) == (None, None, "error")
    assert str(d) == "error: nvcc: Unknown option '-foo'"


def test_remap_log_replaces_only_the_temporary_file_name():
    log, pm = paths_for("diag_errors", "bad.cu", "src/bad.cu")
    text = remap_log(log + "\nsomething/notbad.cu(3): error: x\n", pm)
    assert "src/bad.cu(8): error" in text
    assert 'compilation of "src/bad.cu"' in text
    assert "something/notbad.cu(3)" in text


def test_error_summary_and_exception_shape():
    log, pm = paths_for("diag_errors", "bad.cu", "bad.cu")
    diags = parse_nvcc_log(log, pm)
    exc = NvccCompileError(error_summary(diags, log), diags, log, command=["nvcc"], returncode=1)
    assert isinstance(exc, CompileError)
    assert str(exc) == 'bad.cu:8:57: error: identifier "missing_fn" is undefined'
    assert len(exc.errors) == 2 and exc.log == log
    assert error_summary([], "x\nlast line\n") == "last line"


def test_diagnostic_round_trip():
    d = Diagnostic("a.cu", 3, 4, "warning", "w", "177-D", ("note",))
    assert Diagnostic.from_dict(d.to_dict()) == d


def test_errors_in_included_headers_get_columns_from_the_header(tmp_path):
    header = tmp_path / "helpers.h"
    header.write_text("#pragma once\n__device__ float twice(float x) { return x * undefined_scale; }\n")
    log = (
        f'{header}(2): error: identifier "undefined_scale" is undefined\n'
        "  __attribute__((device)) float twice(float x) { return x * undefined_scale; }\n"
        "                                                            ^\n\n"
        '1 error detected in the compilation of "k.cu".\n'
    )
    (d,) = parse_nvcc_log(log, PathMap(user_file="src/k.cu", aliases=("k.cu",)))
    assert (d.file, d.line, d.column) == (str(header), 2, header.read_text().splitlines()[1].index("undefined") + 1)
