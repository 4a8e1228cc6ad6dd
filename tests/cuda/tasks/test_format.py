"""Task format: expressions, schema errors, generators, signatures, loading."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from veriforge.cuda.tasks import TaskFormatError, find_task, iter_tasks, load_task
from veriforge.cuda.tasks.ctypes_map import find_signature, numpy_dtype, same_type
from veriforge.cuda.tasks.expr import ExpressionError, evaluate, evaluate_int, free_names
from veriforge.cuda.tasks.generate import GeneratorError, make_case

DATA = Path(__file__).parent / "data"
AXPY = DATA / "c2cuda" / "vec_scale_add"


def test_expressions_are_safe_and_correct() -> None:
    env = {"n": 1000, "m": 3}
    assert evaluate("ceil_div(n, 256) * 4", env) == 16
    assert evaluate("max(n // 7, m ** 2) + -1", env) == 141
    assert free_names("ceil_div(n, 256) + m") == {"n", "m"}
    assert evaluate_int("n / 4", env) == 250
    for bad in ("__import__('os')", "n.real", "[n][0]", "lambda: 1", "open('x')"):
        with pytest.raises(ExpressionError):
            evaluate(bad, env)
    with pytest.raises(ExpressionError, match="unknown variable 'k'"):
        evaluate("k + 1", env)
    with pytest.raises(ExpressionError, match="not an integer"):
        evaluate_int("n / 3", env)


def test_c_types_and_signatures() -> None:
    assert numpy_dtype("const float* __restrict__") == "float32"
    assert numpy_dtype("unsigned int*") == "uint32" and numpy_dtype("size_t") == "uint64"
    assert same_type("const float * __restrict__", "const float*")
    assert not same_type("float*", "const float*")
    src = '/* void solve(int x) {} */\nextern "C" void solve(const float* __restrict__ a, float *b, int n) { }'
    sig = find_signature(src, "solve")
    assert [(p.name, p.ctype) for p in sig] == [("a", "const float * __restrict__"), ("b", "float *"), ("n", "int")]


def test_load_and_find(tmp_path: Path) -> None:
    spec = load_task(AXPY)
    assert spec.id == "vec_scale_add" and [c.name for c in spec.configs] == ["small", "odd"]
    assert spec.config("odd").variables == {"n": 1029, "alpha": -0.75}
    assert spec.config("odd").init == {"x": "normal(0, 10)"}
    assert find_task(AXPY) == AXPY
    assert {p.name for p in iter_tasks(DATA)} == {"vec_scale_add", "histogram", "relu_rows"}


def _copy(tmp_path: Path, edit: tuple[str, str]) -> Path:
    dst = tmp_path / "vec_scale_add"
    shutil.copytree(AXPY, dst)
    toml = dst / "task.toml"
    text = toml.read_text()
    assert edit[0] in text
    toml.write_text(text.replace(edit[0], edit[1], 1))
    return dst


@pytest.mark.parametrize("edit,message", [
    (('role = "out"', 'role = "in"'), "needs `init`"),
    (('type = "float*"', 'type = "const float*"'), "cannot be const"),
    (('category = "elementwise"', 'category = "magic"'), "category"),
    (('rtol = 1e-5', 'rtol = 1e-5\ntolerence = 3'), "tolerence"),
    (('init = "uniform(-1, 1)"', 'init = "uniform(-1, __import__(1))"'), "not allowed"),
    (('id = "vec_scale_add"', 'id = "other"'), "differs from the folder name"),
    (('type = "int"', 'type = "int*"'), "does not fit type"),
])
def test_schema_errors_name_the_problem(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    with pytest.raises(TaskFormatError, match=message):
        load_task(_copy(tmp_path, edit))


def test_missing_impl_file_is_reported(tmp_path: Path) -> None:
    folder = _copy(tmp_path, ('file = "impls/naive.cu"', 'file = "impls/nope.cu"'))
    with pytest.raises(TaskFormatError, match=r"impls/nope\.cu"):
        load_task(folder)


def test_inputs_are_deterministic_fresh_per_trial_and_poisoned() -> None:
    spec = load_task(AXPY)
    a0, a0b, a1 = make_case(spec, "odd", 0), make_case(spec, "odd", 0), make_case(spec, "odd", 1)
    x0, x1 = a0.args[0], a1.args[0]
    assert x0.dtype == np.float32 and x0.size == 1029
    assert np.array_equal(x0, a0b.args[0]) and not np.array_equal(x0, x1)
    assert np.std(x0) > 3  # the config's normal(0, 10) override is used
    assert np.isnan(a0.args[2]).all()
    assert a0.args[3] == -0.75 and a0.args[4] == 1029


def test_all_zero_inputs_are_refused(tmp_path: Path) -> None:
    folder = _copy(tmp_path, ('init = "uniform(-1, 1)"', 'init = "randint(0, 1)"'))
    with pytest.raises(GeneratorError, match="all zeros"):
        make_case(load_task(folder), "small", 0)


def test_custom_inputs(tmp_path: Path) -> None:
    folder = _copy(tmp_path, ('init = "normal(0, 3)"', 'init = "custom"'))
    (folder / "inputs.py").write_text(
        "import numpy as np\n"
        "def make_inputs(config, rng):\n"
        "    return {'y': np.arange(config['n'], dtype=np.float32) + 1}\n")
    case = make_case(load_task(folder), "small", 0)
    assert case.args[1][0] == 1 and case.args[1][-1] == 100
