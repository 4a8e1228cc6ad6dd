"""Architecture names and the on-disk artefact cache (no nvcc needed)."""

from __future__ import annotations

import json
import threading

import pytest

from veriforge.cuda.toolchain.arch import InvalidArchError, normalize_arch, validate_arch
from veriforge.cuda.toolchain.cache import ArtifactCache, cache_key
from veriforge.errors import CudaError

KNOWN = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("sm_90", "sm_90"),
        ("90", "sm_90"),
        ("sm80", "sm_80"),
        ("8.6", "sm_86"),
        ("compute_75", "sm_75"),
        (" SM_120 ", "sm_120"),
        ("sm_90a", "sm_90a"),
        ("10.0a", "sm_100a"),
    ],
)
def test_normalize_accepts_common_spellings(given, expected):
    assert normalize_arch(given) == expected


@pytest.mark.parametrize("bad", ["", "sm_", "volta", "sm_9", "sm_90x", "gfx90a"])
def test_malformed_arch_is_a_clear_error(bad):
    with pytest.raises(InvalidArchError, match="expected a name like sm_90"):
        normalize_arch(bad)


def test_validate_against_the_compilers_list():
    assert validate_arch("sm_120", KNOWN) == "sm_120"
    with pytest.raises(InvalidArchError, match=r"sm_91.*choose one of: sm_75, sm_80"):
        validate_arch("sm_91", KNOWN)
    with pytest.raises(InvalidArchError, match="only for sm_90 and newer"):
        validate_arch("sm_86a", KNOWN)
    assert validate_arch("sm_90a", KNOWN) == "sm_90a"
    with pytest.raises(CudaError) as err:
        validate_arch("sm_12", KNOWN)
    assert isinstance(err.value, ValueError)


def test_cache_key_changes_with_every_part():
    base = {"source": "a", "flags": ["-O3"], "arch": "sm_90", "output": "cubin", "compiler": "13.0.88"}
    k0 = cache_key(base)
    assert k0 == cache_key(dict(reversed(list(base.items()))))  # order-insensitive
    for field, other in [
        ("source", "b"),
        ("flags", ["-O2"]),
        ("arch", "sm_80"),
        ("output", "ptx"),
        ("compiler", "12.9.41"),
    ]:
        assert cache_key({**base, field: other}) != k0


def test_cache_round_trip_and_miss(tmp_path):
    cache = ArtifactCache(tmp_path)
    key = cache_key({"x": 1})
    assert cache.get(key) is None
    path = cache.put(key, b"\x7fELF-bytes", {"kernels": [], "log": "ok"})
    assert path.read_bytes() == b"\x7fELF-bytes"
    data, meta, where = cache.get(key)
    assert data == b"\x7fELF-bytes" and meta["log"] == "ok" and meta["artifact_size"] == 10
    assert where == path
    assert not list(tmp_path.rglob("*.tmp"))  # no temp files left behind


def test_cache_rejects_a_damaged_artifact(tmp_path):
    cache = ArtifactCache(tmp_path)
    key = cache_key({"x": 2})
    path = cache.put(key, b"complete artefact", {})
    path.write_bytes(b"compl")  # a torn write by some other tool
    assert cache.get(key) is None
    meta_path = tmp_path / key[:2] / f"{key}.json"
    meta_path.write_text("{not json")
    assert cache.get(key) is None


def test_cache_defaults_to_veriforge_home(_isolated_home):
    cache = ArtifactCache()
    assert cache.root == _isolated_home / "cache" / "nvcc"


def test_concurrent_writers_and_readers_never_see_partial_entries(tmp_path):
    cache = ArtifactCache(tmp_path)
    key = cache_key({"x": "race"})
    payloads = [bytes([i]) * 200_000 for i in range(1, 9)]
    bad: list[str] = []

    def writer(p: bytes) -> None:
        for _ in range(5):
            cache.put(key, p, {"first": p[0]})

    def reader() -> None:
        for _ in range(200):
            hit = cache.get(key)
            if hit is None:
                continue
            data, _meta, _path = hit
            if len(set(data)) != 1 or len(data) != 200_000:
                bad.append("torn artefact")

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    threads += [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    data, meta, _path = cache.get(key)
    assert data in payloads and meta["first"] == data[0]
    assert len(list(tmp_path.rglob("*.bin"))) == len(payloads)  # one immutable file per content
    assert json.loads((tmp_path / key[:2] / f"{key}.json").read_text())["artifact_size"] == 200_000
