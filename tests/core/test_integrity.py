"""The installation's secret key, HMAC signatures and signed files: real files, real processes."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from veriforge.core import integrity
from veriforge.core.paths import cache_dir

FORK = multiprocessing.get_context("fork")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_secret_key_is_created_once_0600_in_the_home(tmp_path, monkeypatch):
    home = tmp_path / "fresh-home"  # not the test home: conftest gives that one the session's key
    monkeypatch.setenv("VERIFORGE_HOME", str(home))
    _isolated_home = home
    path = home / "secret.key"
    assert not path.exists()
    key = integrity.secret_key()
    assert path.is_file() and _mode(path) == 0o600 and path.stat().st_uid == os.geteuid()
    assert path.read_bytes() == key and len(key) == integrity.KEY_BYTES
    assert integrity.key_path() == path
    assert integrity.secret_key() == key
    # no temporary files left next to it
    assert [p.name for p in Path(_isolated_home).iterdir() if "secret" in p.name] == ["secret.key"]


def _key_in_child(barrier, out) -> None:
    barrier.wait()
    try:
        out.put(integrity.secret_key().hex())
    except Exception as exc:  # report instead of dying silently
        out.put(repr(exc))


def test_processes_racing_to_create_the_key_agree_on_one(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", str(tmp_path / "race-home"))
    n = 6
    barrier, out = FORK.Barrier(n), FORK.Queue()
    procs = [FORK.Process(target=_key_in_child, args=(barrier, out)) for _ in range(n)]
    for p in procs:
        p.start()
    keys = {out.get(timeout=60) for _ in range(n)}
    for p in procs:
        p.join(30)
    assert keys == {(tmp_path / "race-home" / "secret.key").read_bytes().hex()}


def test_key_follows_veriforge_home(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", str(tmp_path / "a"))
    sig_a = integrity.sign("x")
    monkeypatch.setenv("VERIFORGE_HOME", str(tmp_path / "b"))
    assert integrity.sign("x") != sig_a and not integrity.verify(sig_a, "x")
    monkeypatch.setenv("VERIFORGE_HOME", str(tmp_path / "a"))
    assert integrity.sign("x") == sig_a


@pytest.mark.parametrize("problem", ["mode", "size", "empty", "symlink"])
def test_unusable_key_file_is_a_clear_error_naming_it(tmp_path, monkeypatch, problem):
    home = tmp_path / f"home-{problem}"
    home.mkdir()
    path = home / "secret.key"
    if problem == "symlink":
        target = tmp_path / "elsewhere.key"
        target.write_bytes(os.urandom(32))
        target.chmod(0o600)
        path.symlink_to(target)
    else:
        path.write_bytes({"mode": os.urandom(32), "size": os.urandom(16), "empty": b""}[problem])
        path.chmod(0o644 if problem == "mode" else 0o600)
    monkeypatch.setenv("VERIFORGE_HOME", str(home))
    expected = {"mode": "mode 0644", "size": "16 bytes long", "empty": "0 bytes long", "symlink": "symbolic link"}
    with pytest.raises(integrity.IntegrityError, match=expected[problem]) as err:
        integrity.sign("x")
    assert str(path) in str(err.value)
    assert path.is_symlink() or path.stat().st_size == {"mode": 32, "size": 16, "empty": 0}[problem]  # untouched


def test_sign_and_verify():
    sig = integrity.sign("key", "kind", b"\x00bytes")
    assert len(sig) == 64 and int(sig, 16) >= 0
    assert integrity.verify(sig, "key", "kind", b"\x00bytes")
    assert not integrity.verify(sig, "key", "kind", b"\x00byteS")
    assert not integrity.verify(sig, "key", "kindb", b"")  # parts are length-prefixed, not concatenated
    assert integrity.sign("ab", "c") != integrity.sign("a", "bc")
    assert integrity.sign("é") == integrity.sign("é".encode())
    for bad in (None, "", "0" * 64, sig.upper(), sig + "0", "ünïcode"):
        assert not integrity.verify(bad, "key", "kind", b"\x00bytes")
    # not a bare hash of the parts: without the key, nobody can compute it
    assert sig != hashlib.sha256(b"keykind\x00bytes").hexdigest()
    with pytest.raises(TypeError):
        integrity.sign(1)  # type: ignore[arg-type]


def test_file_digest_streams_sha256(tmp_path):
    path = tmp_path / "big.bin"
    data = os.urandom(3 * 1024 * 1024 + 7)
    path.write_bytes(data)
    assert integrity.file_digest(path) == hashlib.sha256(data).hexdigest()


def test_signed_file_detects_every_change(tmp_path):
    path = tmp_path / "lib.so"
    path.write_bytes(b"A" * 4096)
    integrity.sign_file(path, "c-ref", "k1")
    assert integrity.signature_path(path).is_file()
    assert integrity.verify_file(path, "c-ref", "k1")
    assert integrity.read_verified(path, "c-ref", "k1") == b"A" * 4096
    assert not integrity.verify_file(path, "c-ref", "k2")  # the signature binds the cache key
    assert not integrity.verify_file(path, "c-ref-out", "k1")
    # same size, mtime put back: the per-process digest memo must still notice (inode ctime changed)
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.write(b"B")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert not integrity.verify_file(path, "c-ref", "k1")
    assert integrity.read_verified(path, "c-ref", "k1") is None
    # re-signed: good again; a missing, empty or oversized signature: never trusted
    integrity.sign_file(path, "c-ref", "k1")
    assert integrity.verify_file(path, "c-ref", "k1")
    sig = integrity.signature_path(path)
    for text in ("", "x" * 10_000):
        sig.write_text(text)
        assert not integrity.verify_file(path, "c-ref", "k1")
    sig.unlink()
    assert not integrity.verify_file(path, "c-ref", "k1")
    assert integrity.read_verified(path, "c-ref", "k1") is None
    assert not integrity.verify_file(tmp_path / "missing.so", "c-ref", "k1")


def test_private_cache_dirs_are_0700(_isolated_home):
    fresh = cache_dir("integrity-test", private=True)
    assert _mode(fresh) == 0o700
    loose = Path(_isolated_home) / "cache" / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o775)
    assert _mode(cache_dir("loose", private=True)) == 0o700
