"""Thoughts for OptiML-G: the built-in set, TOML overrides, selection, and the prompt parsers the
generator relies on (code extraction, compiler feedback)."""

from __future__ import annotations

import pytest

from veriforge.optiml.prompts import (
    compile_feedback,
    extract_code,
    extract_plan,
    generation_prompt,
    verify_feedback,
)
from veriforge.optiml.thoughts import (
    DEFAULT_THOUGHTS,
    Thought,
    ThoughtConfigError,
    default_thoughts,
    load_thoughts,
    parse_thought_names,
    select_thoughts,
)


def test_builtin_thoughts_are_distinct_strategies():
    names = [t.name for t in DEFAULT_THOUGHTS]
    assert names == ["straightforward", "grid_stride", "tiled", "warp_primitives", "vectorized", "fused"]
    assert len({t.guidance for t in DEFAULT_THOUGHTS}) == len(names)
    assert "__shfl" in next(t for t in DEFAULT_THOUGHTS if t.name == "warp_primitives").guidance


def test_toml_overrides_adds_and_keeps_order(tmp_path):
    f = tmp_path / "thoughts.toml"
    f.write_text('[[thoughts]]\nname = "tiled"\ntitle = "Tiles of 64"\nguidance = "Use 64x64 tiles."\n\n'
                 '[[thoughts]]\nname = "coop"\ntitle = "Cooperative groups"\nguidance = "Use cg::reduce."\n')
    loaded = load_thoughts(f)
    names = [t.name for t in loaded]
    assert names == [t.name for t in DEFAULT_THOUGHTS] + ["coop"]
    tiled = next(t for t in loaded if t.name == "tiled")
    assert tiled.title == "Tiles of 64" and tiled.guidance == "Use 64x64 tiles."


def test_toml_replace(tmp_path):
    f = tmp_path / "t.toml"
    f.write_text('replace = true\n[[thoughts]]\nname = "only"\ntitle = "Only"\nguidance = "Just this."\n')
    assert load_thoughts(f) == [Thought("only", "Only", "Just this.")]


@pytest.mark.parametrize("text, message", [
    ('[[thoughts]]\nname = "x"\ntitle = "X"\n', "needs string guidance"),
    ('[[thoughts]]\nname = "Bad Name"\ntitle = "X"\nguidance = "g"\n', "thought name 'Bad Name'"),
    ('[[thoughts]]\nname = "x"\ntitle = "X"\nguidance = "g"\ncolour = 1\n', "unknown keys colour"),
    ('thoughtz = []\n', "unknown keys thoughtz"),
    ('[[thoughts]]\nname = "x"\ntitle = "X"\nguidance = "g"\n[[thoughts]]\nname = "x"\ntitle = "Y"\n'
     'guidance = "h"\n', "defined twice"),
    ('replace = true\n', "no thoughts left"),
    ('not toml [', "not valid TOML"),
])
def test_bad_thought_files_say_what_is_wrong(tmp_path, text, message):
    f = tmp_path / "t.toml"
    f.write_text(text)
    with pytest.raises(ThoughtConfigError, match=message):
        load_thoughts(f)


def test_selection():
    assert parse_thought_names(" tiled, fused ,") == ["tiled", "fused"]
    assert parse_thought_names("  ") is None
    chosen = select_thoughts(default_thoughts(), ["fused", "tiled"])
    assert [t.name for t in chosen] == ["fused", "tiled"]
    assert len(select_thoughts(default_thoughts(), None)) == len(DEFAULT_THOUGHTS)
    with pytest.raises(ThoughtConfigError, match=r"unknown thought.*nope.*available: straightforward"):
        select_thoughts(default_thoughts(), ["nope"])
    with pytest.raises(ThoughtConfigError, match="named twice"):
        select_thoughts(default_thoughts(), ["tiled", "tiled"])


CODE = 'extern "C" void solve(float* x, int n) { k<<<1, 1>>>(x, n); }\n'


@pytest.mark.parametrize("reply, expected", [
    (f"PLAN: p\n```cuda\n{CODE}```", CODE),
    (f"```c++\n// helper\n```\n```cuda\n{CODE}```", CODE),  # cuda beats c++
    (f"```cpp\n{CODE}```", CODE),
    (f"```\n{CODE}```", CODE),  # unlabelled fence
    (f"```cuda\n__device__ int f();\n```\n```cuda\n{CODE}```", CODE),  # the block defining solve wins
    (f"```cuda\n{CODE}", CODE),  # unterminated fence at the end of a truncated reply
    ("__global__ void k(float* x, int n) {}\n" + CODE, "__global__ void k(float* x, int n) {}\n" + CODE),
    ("no code here", None),
    ("```python\nprint(1)\n```", None),
])
def test_extract_code(reply, expected):
    assert extract_code(reply, "solve") == expected


def test_extract_plan():
    assert extract_plan("PLAN: tile by 32.\nMore.\n```cuda\nx\n```") == "tile by 32.\nMore."
    assert extract_plan("**Plan:** warps\n```cuda\nx\n```") == "warps"
    assert extract_plan("I will tile.\n```cuda\nx\n```") == "I will tile."


def test_compile_feedback_maps_gcc_and_nvcc_errors_to_source_lines():
    source = "int a;\nint b = ;\nint c;\n"
    gcc = "candidate.cu: In function 'f':\ncandidate.cu:2:9: error: expected primary-expression before ';'\n"
    text = compile_feedback(gcc, "", source)
    assert "line 2, column 9: error: expected primary-expression" in text
    assert "2 | int b = ;" in text
    nvcc = 'candidate.cu(3): error: identifier "q" is undefined\n'
    text = compile_feedback(nvcc, "", source)
    assert 'line 3: error: identifier "q" is undefined' in text and "3 | int c;" in text
    # no position at all: the verdict's reason is passed on
    reason = "undefined reference to `foo'"
    assert reason in compile_feedback("ld: boom", reason, source)


def test_verify_feedback_lists_failing_configs():
    from veriforge.core.types import InputResult, Verdict

    verdict = Verdict.from_results([
        InputResult(config="small", passed=True),
        InputResult(config="large", passed=False,
                    message="output 'c': 3 of 9 elements wrong (indices 1, 4, 7)"),
    ])
    text = verify_feedback(verdict)
    assert "wrong on large" in text and "indices 1, 4, 7" in text and "(passed: small)" in text


def test_generation_prompt_without_user_words_uses_the_task_description():
    from veriforge.cuda.tasks import find_task, load_task

    spec = load_task(find_task("saxpy"))
    text = generation_prompt(spec, DEFAULT_THOUGHTS[0])
    assert "The user asked for" not in text
    assert 'extern "C" void solve(float alpha, const float* x, float* y, int n)' in text
    assert "`float* y`: device pointer, n elements, input and output" in text
    assert spec.description.strip() in text
