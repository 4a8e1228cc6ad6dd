"""Canonical JSON and content hashes: the bytes behind every cache key."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel

from veriforge.core.hashing import canonical_json, content_hash


class _Color(enum.Enum):
    RED = "red"


@dataclass
class _Point:
    x: int
    y: float


class _M(BaseModel):
    b: int
    a: str


def test_canonical_json_sorts_keys_and_drops_whitespace():
    assert canonical_json({"b": 1, "a": [1, 2, {"d": None, "c": True}]}) == \
        '{"a":[1,2,{"c":true,"d":null}],"b":1}'


def test_canonical_json_is_independent_of_insertion_order():
    one = {"x": {"p": 1, "q": 2}, "y": [3]}
    two = {"y": [3], "x": {"q": 2, "p": 1}}
    assert canonical_json(one) == canonical_json(two)


def test_canonical_json_of_model_equals_its_dump():
    assert canonical_json(_M(b=2, a="z")) == canonical_json({"a": "z", "b": 2}) == '{"a":"z","b":2}'
    assert canonical_json([_M(b=1, a="q")]) == '[{"a":"q","b":1}]'


def test_canonical_json_normalises_tuples_sets_paths_enums_dataclasses():
    assert canonical_json((1, 2)) == canonical_json([1, 2])
    assert canonical_json({3, 1, 2}) == "[1,2,3]"
    assert canonical_json(Path("/a/b")) == '"/a/b"'
    assert canonical_json(_Color.RED) == '"red"'
    assert canonical_json(_Point(1, 2.5)) == '{"x":1,"y":2.5}'


def test_canonical_json_keeps_unicode_and_numpy_scalars():
    np = pytest.importorskip("numpy")
    assert canonical_json({"k": "ü"}) == '{"k":"ü"}'
    assert canonical_json({"n": np.float64(1.5), "a": np.arange(3)}) == '{"a":[0,1,2],"n":1.5}'


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {"x": [float("-inf")]}])
def test_canonical_json_refuses_non_finite(bad):
    with pytest.raises(ValueError):
        canonical_json(bad)


def test_canonical_json_refuses_unknown_objects():
    with pytest.raises(TypeError):
        canonical_json({"x": object()})


def test_content_hash_is_sha256_hex_and_deterministic():
    h = content_hash("cuda", "__global__ void k(){}")
    assert len(h) == 64 and int(h, 16) >= 0
    assert h == content_hash("cuda", "__global__ void k(){}")
    assert h != hashlib.sha256(b"cuda__global__ void k(){}").hexdigest()


def test_content_hash_separates_parts_unambiguously():
    assert content_hash("ab", "c") != content_hash("a", "bc")
    assert content_hash("abc") != content_hash("ab", "c")
    assert content_hash("", "x") != content_hash("x", "")
    assert content_hash() != content_hash("")


def test_content_hash_str_and_utf8_bytes_agree_and_content_matters():
    assert content_hash("héllo") == content_hash("héllo".encode())
    assert content_hash("a") != content_hash("b")


def test_content_hash_rejects_other_types():
    with pytest.raises(TypeError):
        content_hash(1)  # type: ignore[arg-type]
