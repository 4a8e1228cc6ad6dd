"""The run store: one SQLite file that remembers everything a run must not redo.

It keeps evaluations keyed by content hash (so the same candidate is never compiled and checked
twice, whichever process asks), runs with their configuration and status, an event log per run,
checkpoint state for resuming a killed run, the LLM request cache, and namespaced JSON records
for later systems (MoA memories, search trees).

Concurrency model (see docs/core.md): WAL journal so readers never block the writer; one
connection per thread per process (SQLite connections must not cross threads or ``fork``); every
write is a short ``BEGIN IMMEDIATE`` transaction so writers queue on SQLite's lock (with a busy
timeout) instead of failing. :meth:`RunStore.evaluate_once` adds a claim protocol on top so an
expensive evaluation runs once even when several processes want it at the same moment.

Integrity (see docs/core.md, "Integrity of the store and caches"): a store file that is empty, is
not SQLite, or fails ``PRAGMA quick_check`` is refused with a :class:`StoreError` naming it, never
re-initialised; evaluation results carry an HMAC made with the installation's secret key
(:mod:`veriforge.core.integrity`), and a result whose signature does not verify (written by
anything but this harness, edited, or stored before signing existed) is a miss.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sqlite3
import stat
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veriforge.core import integrity
from veriforge.core.hashing import canonical_json, content_hash
from veriforge.core.migrations import MIGRATIONS, Migration
from veriforge.errors import StoreError

if TYPE_CHECKING:
    from veriforge.core.config import Settings

__all__ = ["FINISHED_STATUSES", "RUN_STATUSES", "Event", "Record", "RunInfo", "RunStore", "pid_alive"]

RUN_STATUSES = ("running", "done", "failed", "cancelled")
"""``running`` covers both live runs and runs whose process died; ``failed`` runs may be retried."""

FINISHED_STATUSES = frozenset({"done", "cancelled"})
"""Statuses after which a run can no longer be resumed."""

_HOST = socket.gethostname()
_log = logging.getLogger(__name__)

_SQLITE_HEADER = b"SQLite format 3\x00"
_checked_lock = threading.Lock()
_checked: set[tuple[str, int, int]] = set()
"""Store files (path, device, inode) this process has already run ``PRAGMA quick_check`` on."""


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host and is not a zombie."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        state = stat.rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):
            return False
    except (OSError, IndexError):
        pass
    return True


@dataclass(frozen=True)
class RunInfo:
    """One run as stored. ``resumes`` counts how often it was resumed after being interrupted."""

    id: str
    kind: str
    status: str
    config: dict[str, Any]
    created: float
    updated: float
    finished: float | None
    resumes: int
    pid: int | None
    host: str | None
    summary: dict[str, Any] | None

    @property
    def unfinished(self) -> bool:
        return self.status not in FINISHED_STATUSES


@dataclass(frozen=True)
class Event:
    id: int
    run_id: str
    kind: str
    payload: dict[str, Any]
    created: float


@dataclass(frozen=True)
class Record:
    namespace: str
    key: str
    value: Any
    run_id: str | None
    created: float
    updated: float


class _Connection(sqlite3.Connection):
    """A plain connection that can be weakly referenced (the C type cannot), so connections of
    threads that have ended are closed by garbage collection yet :meth:`RunStore.close` still
    reaches the live ones."""

    owner_pid: int = 0


def _encode(value: Any, what: str) -> str:
    try:
        return canonical_json(value)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serialisable: {exc}") from exc


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class RunStore:
    """The SQLite run store. Safe to share between threads and to use from many processes.

    ``path=None`` uses ``store.path`` from the settings, else ``<VERIFORGE_HOME>/runs.sqlite``.
    ``lease_s`` is how long an evaluation claim stays valid without a heartbeat (the owner renews
    it every ``lease_s / 3`` while it works); ``poll_s`` is the first wait between polls of a
    waiter.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        settings: Settings | None = None,
        busy_timeout_s: float = 60.0,
        lease_s: float = 30.0,
        poll_s: float = 0.02,
        migrations: Sequence[Migration] | None = None,
    ) -> None:
        if path is None:
            path = _default_path(settings)
        if str(path) == ":memory:" or str(path).startswith("file::memory:"):
            raise StoreError("the run store needs a file: an in-memory database is private to one "
                             "connection, and the store uses one connection per thread")
        self.path = Path(path).expanduser().resolve()
        self.busy_timeout_s = busy_timeout_s
        self.lease_s = lease_s
        self.poll_s = poll_s
        self._migrations: list[Migration] = list(MIGRATIONS if migrations is None else migrations)
        _check_migrations(self._migrations)
        self._local = threading.local()
        self._conns: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._inherited: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._claims: dict[str, str] = {}  # owner token -> key, renewed by the heartbeat thread
        self._warned: set[tuple[str, str | None]] = set()  # evaluations already logged as untrusted
        self._heartbeat: threading.Thread | None = None
        self._stop = threading.Event()
        self._owner_pid = os.getpid()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder for the run store {self.path}: {exc}") from exc
        if not _inspect_file(self.path):
            _create_file(self.path)
            _inspect_file(self.path)
        self._migrate()

    # --- connections and transactions ------------------------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> RunStore:
        return cls(settings=settings, **kwargs)

    @property
    def schema_version(self) -> int:
        return int(self._conn().execute("PRAGMA user_version").fetchone()[0])

    def _open(self, check: bool = False) -> _Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None,
                                   check_same_thread=False, factory=_Connection)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the run store {self.path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            if check:  # before anything that could write (switching a rollback-mode file to WAL)
                self._quick_check(conn)
            mode = self._retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            if str(mode).lower() != "wal":
                raise StoreError(f"the run store {self.path} cannot use WAL mode (got {mode!r}); "
                                 "it needs a local file system")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"cannot open the run store {self.path}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _quick_check(self, conn: sqlite3.Connection) -> None:
        """Refuse a damaged file: ``PRAGMA quick_check`` must answer ``ok``."""
        try:
            rows = self._retry(lambda: conn.execute("PRAGMA quick_check").fetchall())
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise StoreError(f"cannot open the run store {self.path}: {exc}") from exc
            problems = str(exc)
        except sqlite3.DatabaseError as exc:
            problems = str(exc)
        else:
            if [tuple(r) for r in rows] == [("ok",)]:
                return
            problems = "; ".join(str(r[0]) for r in rows[:5])
            if len(rows) > 5:
                problems += f" (and {len(rows) - 5} more)"
        raise StoreError(f"the run store {self.path} is damaged (SQLite's integrity check says: {problems}). "
                         "Nothing was changed; restore it from a backup, or move it away to start a new store")

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"the run store {self.path} is closed")
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is not None and local.pid == os.getpid():
            return conn
        if conn is not None:
            # Inherited across fork(): never use it, and never close it either (closing could
            # checkpoint or delete the WAL under the parent's feet). Keep it referenced forever.
            self._inherited.append(conn)
        ident = _file_identity(self.path)
        check = ident is None or ident not in _checked
        conn = self._open(check=check)
        if check and ident is not None:
            with _checked_lock:
                _checked.add(ident)
        conn.owner_pid = os.getpid()
        local.conn, local.pid = conn, os.getpid()
        with self._lock:
            self._conns.add(conn)
        return conn

    def _retry(self, op: Callable[[], Any]) -> Any:
        """Run ``op``, retrying while SQLite reports the database busy (some paths, e.g. changing
        the journal mode, return BUSY without consulting the busy handler)."""
        deadline = time.monotonic() + self.busy_timeout_s
        delay = 0.005
        while True:
            try:
                return op()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``); nested uses join the outer one.

        Use it to make several store writes atomic, e.g. record a result and advance a checkpoint
        together so a crash between the two cannot happen.
        """
        conn = self._conn()
        if conn.in_transaction:
            yield conn
            return
        try:
            self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to the run store {self.path}: {exc}") from exc
        try:
            yield conn
        except sqlite3.Error as exc:
            conn.rollback()
            raise StoreError(f"run store write failed ({self.path}): {exc}") from exc
        except BaseException:
            conn.rollback()
            raise
        try:
            conn.commit()
        except sqlite3.Error as exc:
            conn.rollback()
            raise StoreError(f"cannot commit to the run store {self.path}: {exc}") from exc

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"run store query failed: {exc}") from exc

    def close(self) -> None:
        """Close this process's connections and stop the heartbeat; the object is unusable after."""
        self._stop.set()
        hb = self._heartbeat
        if hb is not None and hb is not threading.current_thread():
            hb.join(timeout=5)
        with self._lock:
            conns = list(self._conns)
            self._conns = weakref.WeakSet()
        for conn in conns:
            if getattr(conn, "owner_pid", None) != os.getpid():
                continue  # inherited across fork(): the parent's to close, not ours
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._closed = True

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- schema ------------------------------------------------------------------------------

    def _migrate(self) -> None:
        latest = self._migrations[-1].version if self._migrations else 0
        conn = self._conn()
        try:
            current = int(conn.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a veriforge run store: {exc}") from exc
        if current > latest:
            raise StoreError(
                f"the run store {self.path} has schema version {current}, newer than the {latest} this "
                "veriforge knows; upgrade veriforge or point store.path at another file")
        if current == latest:
            return
        with self.transaction():
            # Re-read under the write lock: another process may have migrated meanwhile.
            current = int(conn.execute("PRAGMA user_version").fetchone()[0])
            for step in self._migrations:
                if step.version <= current:
                    continue
                try:
                    step.apply(conn)
                except sqlite3.Error as exc:
                    raise StoreError(f"migrating the run store {self.path} to version {step.version} "
                                     f"({step.description}) failed: {exc}") from exc
                conn.execute(f"PRAGMA user_version = {int(step.version)}")

    # --- evaluations -------------------------------------------------------------------------

    def _trusted(self, key: str, kind: str, text: str, sig: str | None, *, warn: bool = True) -> bool:
        """Whether a stored evaluation was signed by this installation's harness, as it stands."""
        if (isinstance(kind, str) and isinstance(text, str)
                and integrity.verify(sig, *_eval_parts(key, kind, text))):
            return True
        if warn and (key, sig) not in self._warned:
            self._warned.add((key, sig))  # once per record and store object: waiters poll
            why = ("is unsigned (stored before signing existed, or not by veriforge)" if sig is None
                   else "has a signature that does not match (edited, or not written by this harness)")
            _log.warning("run store %s: evaluation %s %s; treating it as not evaluated", self.path, key, why)
        return False

    def get_evaluation(self, key: str) -> dict[str, Any] | None:
        """The stored result for ``key``, or ``None`` if it was never evaluated (or does not verify)."""
        rows = self._read("SELECT kind, result, sig FROM evaluations WHERE key = ?", (key,))
        if not rows or not self._trusted(key, *rows[0]):
            return None
        return json.loads(rows[0][1])

    def put_evaluation(self, key: str, result: dict[str, Any], kind: str = "") -> None:
        """Store (or replace) the result for ``key``, signed."""
        text = _encode(result, f"evaluation result for {key}")
        sig = integrity.sign(*_eval_parts(key, kind, text))
        with self.transaction() as conn:
            conn.execute("INSERT INTO evaluations(key, kind, result, created, sig) VALUES (?, ?, ?, ?, ?) "
                         "ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, result = excluded.result, "
                         "sig = excluded.sig", (key, kind, text, time.time(), sig))

    def iter_evaluations(self, kind: str | None = None) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """Every stored ``(key, kind, result)`` (optionally of one ``kind``), oldest first.

        For consumers that learn from past evaluations, e.g. calibrating the cost model on the GPU
        timings a run store has accumulated. Records that do not verify are skipped (and logged).
        """
        if kind is None:
            rows = self._read("SELECT key, kind, result, sig FROM evaluations ORDER BY created, key")
        else:
            rows = self._read("SELECT key, kind, result, sig FROM evaluations WHERE kind = ? "
                              "ORDER BY created, key", (kind,))
        for key, k, text, sig in rows:
            if self._trusted(key, k, text, sig):
                yield key, k, json.loads(text)

    def count_evaluations(self, kind: str | None = None) -> int:
        """How many stored evaluations verify (would be hits), optionally of one ``kind``."""
        rows = self._read("SELECT key, kind, result, sig FROM evaluations WHERE (? IS NULL OR kind = ?)",
                          (kind, kind))
        return sum(1 for key, k, text, sig in rows if self._trusted(key, k, text, sig, warn=False))

    def evaluate_once(self, key: str, fn: Callable[[], dict[str, Any]], kind: str = "", *,
                      wait_timeout_s: float | None = None) -> dict[str, Any]:
        """Return the stored result for ``key``, computing it with ``fn`` only if nobody has.

        Across threads and processes, ``fn`` runs at most once per key: the first caller claims
        the key; the others poll until its result lands. A claim whose owner died (same host, pid
        gone) or whose lease ran out (the owner stopped renewing it) is taken over. If ``fn``
        raises, the claim is released (the next caller retries) and the exception propagates.
        The returned dict is always the stored JSON form, identical for hits and misses.
        """
        deadline = None if wait_timeout_s is None else time.monotonic() + wait_timeout_s
        delay = self.poll_s
        while True:
            state, value = self._try_claim(key)
            if state == "done":
                return value
            if state == "claimed":
                break
            if deadline is not None and time.monotonic() > deadline:
                raise StoreError(f"timed out after {wait_timeout_s}s waiting for evaluation {key[:16]} "
                                 f"claimed by pid {value[0]} on {value[1]}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)
        token: str = value
        self._hold(token, key)
        try:
            result = fn()
            text = _encode(result, f"evaluation result for {key}")
            sig = integrity.sign(*_eval_parts(key, kind, text))
        except BaseException:
            self._drop(token)
            with contextlib.suppress(StoreError):
                with self.transaction() as conn:
                    conn.execute("DELETE FROM eval_claims WHERE key = ? AND owner = ?", (key, token))
            raise
        try:
            with self.transaction() as conn:
                # First result wins: if our lease lapsed and someone else finished meanwhile, every
                # caller must still see one and the same result. A record that does not verify is
                # no result: it is overwritten.
                row = conn.execute("SELECT kind, result, sig FROM evaluations WHERE key = ?", (key,)).fetchone()
                if row is not None and self._trusted(key, *row, warn=False):
                    stored = row[1]
                else:
                    conn.execute("INSERT INTO evaluations(key, kind, result, created, sig) VALUES (?, ?, ?, ?, ?) "
                                 "ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, result = excluded.result, "
                                 "sig = excluded.sig", (key, kind, text, time.time(), sig))
                    stored = text
                conn.execute("DELETE FROM eval_claims WHERE key = ?", (key,))
        finally:
            self._drop(token)
        return json.loads(stored)

    def _try_claim(self, key: str) -> tuple[str, Any]:
        """One atomic look: ("done", result) | ("claimed", token) | ("wait", (pid, host))."""
        with self.transaction() as conn:
            row = conn.execute("SELECT kind, result, sig FROM evaluations WHERE key = ?", (key,)).fetchone()
            if row is not None and self._trusted(key, *row):
                return "done", json.loads(row[1])
            claim = conn.execute("SELECT pid, host, lease_until FROM eval_claims WHERE key = ?",
                                 (key,)).fetchone()
            now = time.time()
            if claim is not None:
                pid, host, lease_until = claim
                owner_dead = host == _HOST and not pid_alive(int(pid))
                if lease_until >= now and not owner_dead:
                    return "wait", (pid, host)
            token = uuid.uuid4().hex
            conn.execute("INSERT OR REPLACE INTO eval_claims(key, owner, pid, host, lease_until, claimed) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (key, token, os.getpid(), _HOST, now + self.lease_s, now))
            return "claimed", token

    def _hold(self, token: str, key: str) -> None:
        if self._owner_pid != os.getpid():
            # Forked child: the parent's claims and heartbeat thread are not ours.
            self._owner_pid = os.getpid()
            self._lock = threading.Lock()
            self._claims = {}
            self._heartbeat = None
            self._stop = threading.Event()
        with self._lock:
            self._claims[token] = key
            if self._heartbeat is None or not self._heartbeat.is_alive():
                self._stop.clear()
                self._heartbeat = threading.Thread(target=self._renew_leases, daemon=True,
                                                   name="veriforge-store-heartbeat")
                self._heartbeat.start()

    def _drop(self, token: str) -> None:
        with self._lock:
            self._claims.pop(token, None)

    def _renew_leases(self) -> None:
        """Heartbeat: keep this process's claims alive while their evaluations run."""
        conn: _Connection | None = None
        try:
            while not self._stop.wait(self.lease_s / 3):
                with self._lock:
                    if not self._claims:
                        self._heartbeat = None
                        return
                    claims = list(self._claims.items())
                if conn is None:
                    conn = self._open()
                self._renew(conn, claims)
        finally:
            if conn is not None:
                conn.close()

    def _renew(self, conn: sqlite3.Connection, claims: list[tuple[str, str]]) -> None:
        until = time.time() + self.lease_s
        try:
            self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
            conn.executemany("UPDATE eval_claims SET lease_until = ? WHERE key = ? AND owner = ?",
                             [(until, key, token) for token, key in claims])
            conn.commit()
        except sqlite3.Error:
            # A missed beat is harmless unless it repeats for a whole lease; the next one retries.
            if conn.in_transaction:
                conn.rollback()

    # --- runs --------------------------------------------------------------------------------

    def start_run(self, kind: str, config: dict[str, Any], run_id: str | None = None) -> str:
        """Start a run, or resume it if ``run_id`` names an unfinished one; returns the run id.

        Resuming requires the same kind and an identical config (a checkpoint made under another
        config would be silently wrong), sets the status back to ``running`` and counts the resume.
        """
        if not kind:
            raise StoreError("a run needs a kind (e.g. 'optiml', 'cudaperf-rl')")
        cfg = _encode(config, "run config")
        cfg_hash = content_hash(cfg)
        now = time.time()
        new_id = run_id or f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        with self.transaction() as conn:
            row = conn.execute("SELECT kind, status, config, config_hash, pid, host FROM runs WHERE id = ?",
                               (new_id,)).fetchone()
            if row is None:
                conn.execute("INSERT INTO runs(id, kind, config, config_hash, status, created, updated, "
                             "resumes, pid, host) VALUES (?, ?, ?, ?, 'running', ?, ?, 0, ?, ?)",
                             (new_id, kind, cfg, cfg_hash, now, now, os.getpid(), _HOST))
                return new_id
            old_kind, status, old_cfg, old_hash, pid, host = row
            if old_kind != kind:
                raise StoreError(f"run {new_id} is a {old_kind!r} run, not {kind!r}")
            if status in FINISHED_STATUSES:
                raise StoreError(f"run {new_id} already finished ({status}); start a new run instead")
            if old_hash != cfg_hash:
                raise StoreError(f"cannot resume run {new_id}: its config differs "
                                 f"({_config_diff(json.loads(old_cfg), json.loads(cfg))})")
            if (status == "running" and host == _HOST and pid is not None and pid != os.getpid()
                    and pid_alive(int(pid))):
                raise StoreError(f"run {new_id} is still running in process {pid}")
            conn.execute("UPDATE runs SET status = 'running', resumes = resumes + 1, updated = ?, "
                         "finished = NULL, pid = ?, host = ? WHERE id = ?",
                         (now, os.getpid(), _HOST, new_id))
        return new_id

    def finish_run(self, run_id: str, status: str = "done", summary: dict[str, Any] | None = None) -> None:
        """Mark a run ended: ``done`` or ``cancelled`` (final) or ``failed`` (may be resumed)."""
        if status not in RUN_STATUSES or status == "running":
            raise StoreError(f"invalid final status {status!r}; use one of done, failed, cancelled")
        text = None if summary is None else _encode(summary, "run summary")
        now = time.time()
        with self.transaction() as conn:
            cur = conn.execute("UPDATE runs SET status = ?, finished = ?, updated = ?, summary = ? "
                               "WHERE id = ?", (status, now, now, text, run_id))
            if cur.rowcount == 0:
                raise StoreError(f"unknown run {run_id!r}")

    def get_run(self, run_id: str) -> RunInfo | None:
        rows = self._read(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        return _run_info(rows[0]) if rows else None

    def list_runs(self, kind: str | None = None, status: str | None = None) -> list[RunInfo]:
        """Runs, oldest first, optionally filtered by kind and status."""
        sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE (? IS NULL OR kind = ?) AND (? IS NULL OR status = ?) " \
              "ORDER BY created, rowid"
        return [_run_info(r) for r in self._read(sql, (kind, kind, status, status))]

    def unfinished_runs(self, kind: str | None = None) -> list[RunInfo]:
        """Runs that can be resumed: still ``running`` (perhaps killed) or ``failed``."""
        return [r for r in self.list_runs(kind=kind) if r.unfinished]

    def _require_run(self, conn: sqlite3.Connection, run_id: str) -> None:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise StoreError(f"unknown run {run_id!r} (call start_run first)")

    # --- events ------------------------------------------------------------------------------

    def add_event(self, run_id: str, kind: str, payload: dict[str, Any] | None = None) -> int:
        """Append an event to a run's log; returns its id (increasing)."""
        text = _encode(payload or {}, f"payload of event {kind!r}")
        with self.transaction() as conn:
            self._require_run(conn, run_id)
            cur = conn.execute("INSERT INTO events(run_id, kind, payload, created) VALUES (?, ?, ?, ?)",
                               (run_id, kind, text, time.time()))
            return int(cur.lastrowid or 0)

    def events(self, run_id: str, kind: str | None = None, after: int | None = None) -> list[Event]:
        """A run's events in order; ``after`` returns only those with a larger id (for tailing)."""
        rows = self._read("SELECT id, run_id, kind, payload, created FROM events WHERE run_id = ? "
                          "AND (? IS NULL OR kind = ?) AND id > ? ORDER BY id",
                          (run_id, kind, kind, after or 0))
        return [Event(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in rows]

    # --- checkpoints -------------------------------------------------------------------------

    def set_state(self, run_id: str, key: str, value: Any) -> None:
        """Checkpoint a JSON value under ``key`` for this run (replaces the previous one)."""
        text = _encode(value, f"state {key!r}")
        with self.transaction() as conn:
            self._require_run(conn, run_id)
            conn.execute("INSERT INTO run_state(run_id, key, value, updated) VALUES (?, ?, ?, ?) "
                         "ON CONFLICT(run_id, key) DO UPDATE SET value = excluded.value, "
                         "updated = excluded.updated", (run_id, key, text, time.time()))

    def get_state(self, run_id: str, key: str, default: Any = None) -> Any:
        rows = self._read("SELECT value FROM run_state WHERE run_id = ? AND key = ?", (run_id, key))
        return json.loads(rows[0][0]) if rows else default

    def state(self, run_id: str) -> dict[str, Any]:
        """All checkpointed values of a run."""
        rows = self._read("SELECT key, value FROM run_state WHERE run_id = ? ORDER BY key", (run_id,))
        return {k: json.loads(v) for k, v in rows}

    # --- LLM request cache -------------------------------------------------------------------

    def llm_cache_get(self, key: str) -> dict[str, Any] | None:
        rows = self._read("SELECT value FROM llm_cache WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def llm_cache_put(self, key: str, value: dict[str, Any]) -> None:
        text = _encode(value, "LLM cache entry")
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO llm_cache(key, value, created) VALUES (?, ?, ?)",
                         (key, text, time.time()))

    def llm_cache_clear(self) -> int:
        """Forget every cached LLM response; returns how many were removed."""
        with self.transaction() as conn:
            return int(conn.execute("DELETE FROM llm_cache").rowcount)

    # --- namespaced records ------------------------------------------------------------------

    def put_record(self, namespace: str, key: str, value: Any, run_id: str | None = None) -> None:
        """Store a JSON value under ``(namespace, key)``, optionally tied to a run."""
        text = _encode(value, f"record {namespace}/{key}")
        now = time.time()
        with self.transaction() as conn:
            if run_id is not None:
                self._require_run(conn, run_id)
            conn.execute("INSERT INTO records(namespace, key, run_id, value, created, updated) "
                         "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(namespace, key) DO UPDATE SET "
                         "value = excluded.value, run_id = excluded.run_id, updated = excluded.updated",
                         (namespace, key, run_id, text, now, now))

    def get_record(self, namespace: str, key: str, default: Any = None) -> Any:
        rows = self._read("SELECT value FROM records WHERE namespace = ? AND key = ?", (namespace, key))
        return json.loads(rows[0][0]) if rows else default

    def records(self, namespace: str, run_id: str | None = None) -> list[Record]:
        """Records of a namespace in insertion order, optionally only those of one run."""
        rows = self._read("SELECT namespace, key, value, run_id, created, updated FROM records "
                          "WHERE namespace = ? AND (? IS NULL OR run_id = ?) ORDER BY created, rowid",
                          (namespace, run_id, run_id))
        return [Record(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5]) for r in rows]

    def delete_record(self, namespace: str, key: str) -> bool:
        with self.transaction() as conn:
            cur = conn.execute("DELETE FROM records WHERE namespace = ? AND key = ?", (namespace, key))
            return cur.rowcount > 0


def _eval_parts(key: str, kind: str, text: str) -> tuple[str, ...]:
    """What an evaluation's signature covers: its key, kind and canonical JSON result."""
    return ("evaluation", key, kind, text)


def _file_identity(path: Path) -> tuple[str, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return str(path), st.st_dev, st.st_ino


def _inspect_file(path: Path) -> bool:
    """Whether ``path`` exists; refuses (without touching it) a file that cannot be a run store.

    SQLite treats a zero-length file as an empty database and would happily create a fresh
    schema in it, silently losing every result the file once held; so this looks first.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StoreError(f"cannot read the run store {path}: {exc}") from exc
    try:
        st = os.fstat(fd)
        head = os.read(fd, len(_SQLITE_HEADER)) if stat.S_ISREG(st.st_mode) else b""
    except OSError as exc:
        raise StoreError(f"cannot read the run store {path}: {exc}") from exc
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"the run store {path} is not a regular file. Nothing was changed; point store.path "
                         "at a file")
    if st.st_size == 0:
        raise StoreError(f"the run store {path} is empty (0 bytes): it was truncated or damaged, and opening it "
                         "would silently start a new store in its place. Nothing was changed; restore it from a "
                         "backup, or move it away to start a new store")
    if head != _SQLITE_HEADER or st.st_size < 512:
        raise StoreError(f"the run store {path} is not an SQLite database ({st.st_size} bytes without SQLite's "
                         "header): it is another kind of file or it is damaged. Nothing was changed; point "
                         "store.path at a run store, or move this file away to start a new store")
    return True


def _create_file(path: Path) -> None:
    """Create an empty WAL-mode database at ``path`` unless something is there already.

    It is built under a temporary name and hard-linked into place, so a concurrent opener never
    sees a half-created (zero-length) file, which it would have to refuse.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.new")
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
        finally:
            conn.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process created it first
        except OSError:
            # No hard links on this file system: copy the bytes into an exclusively created file.
            data = tmp.read_bytes()
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                return
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"cannot create the run store {path}: {exc}") from exc
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(f"{tmp}{suffix}")


_RUN_COLUMNS = "id, kind, status, config, created, updated, finished, resumes, pid, host, summary"


def _run_info(row: tuple[Any, ...]) -> RunInfo:
    return RunInfo(id=row[0], kind=row[1], status=row[2], config=json.loads(row[3]), created=row[4],
                   updated=row[5], finished=row[6], resumes=int(row[7]), pid=row[8], host=row[9],
                   summary=None if row[10] is None else json.loads(row[10]))


def _config_diff(old: Any, new: Any) -> str:
    if not isinstance(old, dict) or not isinstance(new, dict):
        return "stored and given configs differ"
    keys = sorted(k for k in old.keys() | new.keys() if old.get(k, _MISSING) != new.get(k, _MISSING))
    return "differing keys: " + ", ".join(keys)


_MISSING = object()


def _default_path(settings: Settings | None) -> Path:
    from veriforge.core.config import active_settings
    from veriforge.core.paths import home

    settings = settings if settings is not None else active_settings()
    return settings.store.path or home() / "runs.sqlite"


def _check_migrations(migrations: Sequence[Migration]) -> None:
    for expected, step in enumerate(migrations, start=1):
        if step.version != expected:
            raise StoreError(f"migrations must be numbered 1, 2, 3, ... in order; found version "
                             f"{step.version} at position {expected}")
