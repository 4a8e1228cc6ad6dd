"""Tamper evidence for the run store and the build/output caches.

veriforge runs untrusted, model-written programs. Whatever it caches (evaluation results in the
run store, compiled references and their outputs, compiled executables) is trusted on a hit only if
it carries an HMAC made with a **per-installation secret key**: 32 random bytes in
``<VERIFORGE_HOME>/secret.key``, created once with mode 0600 and never shown to candidates (they
run under an unprivileged per-run uid that cannot read a root-only 0600 file). A candidate that
writes a result into the store or swaps a cached file cannot produce a valid signature, so its
writes read as misses and are recomputed.

- :func:`sign` / :func:`verify`: HMAC-SHA256 (hex) over a canonical, length-prefixed encoding of
  ``str``/``bytes`` parts, so ``("ab", "c")`` and ``("a", "bc")`` never sign alike.
- :func:`file_digest`: streamed SHA-256 of a file.
- :func:`sign_file` / :func:`verify_file` / :func:`read_verified`: a ``<file>.sig`` next to a
  cached file, holding the HMAC of the cache key parts and the file's SHA-256. Digests are memoised
  per process by ``(path, device, inode, size, mtime, ctime)``, so verifying a hit again is a
  ``stat`` and an HMAC.

Standard library only, so importing it costs next to nothing.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import stat
import threading
import time
from pathlib import Path

from veriforge.errors import VeriforgeError

__all__ = [
    "KEY_BYTES",
    "KEY_FILE",
    "SIG_SUFFIX",
    "IntegrityError",
    "file_digest",
    "key_path",
    "read_verified",
    "secret_key",
    "sign",
    "sign_file",
    "signature_path",
    "verify",
    "verify_file",
    "write_signature",
]

KEY_FILE = "secret.key"
KEY_BYTES = 32
SIG_SUFFIX = ".sig"
_TAG = b"veriforge-hmac-v1"
_MAX_SIG_BYTES = 256  # a hex HMAC-SHA256 is 64 characters; anything much longer is not ours

_lock = threading.Lock()
_keys: dict[tuple[str | None, ...], bytes] = {}  # environment that decides the home -> key
_digests: dict[tuple[str, int, int, int, int, int], str] = {}  # file identity -> sha256


class IntegrityError(VeriforgeError):
    """The secret key is unusable (wrong permissions, size, owner) or could not be created."""


# --- the secret key ----------------------------------------------------------------------------

def _env_key() -> tuple[str | None, ...]:
    env = os.environ
    return env.get("VERIFORGE_HOME"), env.get("XDG_CACHE_HOME"), env.get("HOME")


def key_path() -> Path:
    """Where the secret key of the current ``VERIFORGE_HOME`` lives (home created if needed)."""
    from veriforge.core.paths import home

    return home() / KEY_FILE


def secret_key() -> bytes:
    """This installation's 32-byte HMAC key, created on first use; cached per process and home."""
    env = _env_key()
    key = _keys.get(env)
    if key is not None:
        return key
    with _lock:
        key = _keys.get(env)
        if key is None:
            key = _load_or_create(key_path())
            _keys[env] = key
    return key


def _load_or_create(path: Path) -> bytes:
    for _ in range(3):
        try:
            return _read_key(path)
        except FileNotFoundError:
            pass
        _create_key(path)
    raise IntegrityError(f"the secret key {path} keeps disappearing while it is being created")


def _read_key(path: Path) -> bytes:
    deadline = time.monotonic() + 1.0
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise IntegrityError(f"the secret key {path} is a symbolic link; it must be a regular file "
                                     "(remove it to have a new key made)") from exc
            raise IntegrityError(f"cannot read the secret key {path}: {exc}") from exc
        try:
            st = os.fstat(fd)
            data = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IntegrityError(f"the secret key {path} is not a regular file")
        if st.st_uid != os.geteuid():
            raise IntegrityError(f"the secret key {path} belongs to uid {st.st_uid}, not to this user "
                                 f"(uid {os.geteuid()}); someone else could have chosen it. Remove it to have "
                                 "a new key made (cached results signed with the old key are then recomputed)")
        if st.st_mode & 0o077:
            raise IntegrityError(f"the secret key {path} has mode {stat.S_IMODE(st.st_mode):04o}; it must be 0600 "
                                 "(readable by its owner only). Other users may have read it: remove it to have "
                                 "a new key made")
        if st.st_size == 0 and time.monotonic() < deadline:
            time.sleep(0.01)  # a concurrent creator on a file system without hard links is still writing
            continue
        if len(data) != KEY_BYTES or st.st_size != KEY_BYTES:
            raise IntegrityError(f"the secret key {path} is {st.st_size} bytes long, not {KEY_BYTES}; it is damaged. "
                                 "Remove it to have a new key made (cached results are then recomputed)")
        return data


def _create_key(path: Path) -> None:
    """Publish a fresh key at ``path`` unless one exists: written to a private temporary file
    (``O_EXCL``, 0600), then hard-linked into place, so nobody ever reads a half-written key."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = os.urandom(KEY_BYTES)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o600)
        try:
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process was first: everyone uses its key
        except OSError:
            # No hard links here: create the final name exclusively (readers wait out the gap).
            try:
                fd = os.open(path, flags, 0o600)
            except FileExistsError:
                return
            try:
                os.write(fd, key)
                os.fsync(fd)
            finally:
                os.close(fd)
    except OSError as exc:
        raise IntegrityError(f"cannot create the secret key {path}: {exc}") from exc
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


# --- signatures --------------------------------------------------------------------------------

def _mac(parts: tuple[str | bytes, ...]) -> str:
    from veriforge.core.hashing import feed_parts

    mac = hmac.new(secret_key(), _TAG, hashlib.sha256)
    feed_parts(mac, parts, "signed")
    return mac.hexdigest()


def sign(*parts: str | bytes) -> str:
    """HMAC-SHA256 (hex) of ``parts`` under this installation's secret key."""
    return _mac(parts)


def verify(signature: str | bytes | None, *parts: str | bytes) -> bool:
    """Whether ``signature`` is :func:`sign` of ``parts`` (constant-time; ``None`` is never valid)."""
    if isinstance(signature, str):
        given = signature.encode("utf-8", "replace")
    elif isinstance(signature, bytes):
        given = signature
    else:
        return False
    return hmac.compare_digest(_mac(parts).encode("ascii"), given)


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of a file's contents, read in chunks."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


# --- signed files ------------------------------------------------------------------------------

def signature_path(path: str | os.PathLike[str]) -> Path:
    """The signature file of ``path``: ``<path>.sig``."""
    return Path(f"{os.fspath(path)}{SIG_SUFFIX}")


def _identity(path: str, st: os.stat_result) -> tuple[str, int, int, int, int, int]:
    return path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _memo_digest(path: str | os.PathLike[str]) -> str:
    """The file's SHA-256, memoised while its identity (inode, size, mtime, ctime) is unchanged."""
    name = os.path.abspath(os.fspath(path))
    with open(name, "rb") as fh:
        before = os.fstat(fh.fileno())
        ident = _identity(name, before)
        digest = _digests.get(ident)
        if digest is not None:
            return digest
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
        after = os.fstat(fh.fileno())
    if _identity(name, after) == ident:  # not written to while we read it
        if len(_digests) > 4096:
            _digests.clear()
        _digests[ident] = digest
    return digest


def write_signature(path: str | os.PathLike[str], signature: str) -> None:
    """Atomically write ``signature`` to ``<path>.sig``."""
    sig = signature_path(path)
    tmp = sig.with_name(f".{sig.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(signature + "\n")
    os.replace(tmp, sig)


def sign_file(path: str | os.PathLike[str], *parts: str | bytes) -> str:
    """Sign ``path`` for the cache key ``parts``: writes ``<path>.sig``; returns the file's SHA-256.

    Call it after the file is in place (or on the temporary file before the rename, then move
    the signature with it): the signature binds the key to exactly these bytes.
    """
    digest = _memo_digest(path)
    write_signature(path, sign("file", *parts, digest))
    return digest


def _read_signature(path: str | os.PathLike[str]) -> str | None:
    try:
        with open(signature_path(path), "rb") as fh:
            raw = fh.read(_MAX_SIG_BYTES + 1)
    except OSError:
        return None
    if len(raw) > _MAX_SIG_BYTES:
        return None
    return raw.decode("ascii", "replace").strip()


def verify_file(path: str | os.PathLike[str], *parts: str | bytes) -> bool:
    """Whether ``path`` exists and ``<path>.sig`` signs its current contents for the key ``parts``.

    A missing file, a missing or malformed signature, other contents or another key: ``False``.
    """
    sig = _read_signature(path)
    if sig is None:
        return False
    try:
        digest = _memo_digest(path)
    except OSError:
        return False
    return verify(sig, "file", *parts, digest)


def read_verified(path: str | os.PathLike[str], *parts: str | bytes) -> bytes | None:
    """The contents of ``path`` if ``<path>.sig`` signs exactly these bytes for ``parts``, else None.

    The bytes returned are the bytes checked, so nothing can change between check and use.
    """
    sig = _read_signature(path)
    if sig is None:
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    digest = hashlib.sha256(data).hexdigest()
    return data if verify(sig, "file", *parts, digest) else None
