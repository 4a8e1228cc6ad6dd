"""The SQLite run store: real files, real threads, real processes."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from veriforge.core.migrations import MIGRATIONS, SCHEMA_VERSION, Migration, split_sql
from veriforge.core.store import RunStore, pid_alive
from veriforge.errors import StoreError

FORK = multiprocessing.get_context("fork")


@pytest.fixture
def store(tmp_path):
    s = RunStore(tmp_path / "runs.sqlite")
    yield s
    s.close()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --- opening -----------------------------------------------------------------------------------

def test_opens_file_in_wal_mode_at_latest_schema(tmp_path):
    path = tmp_path / "sub" / "runs.sqlite"
    with RunStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "events", "evaluations", "run_state", "eval_claims", "llm_cache", "records"} <= tables


def test_default_path_is_under_veriforge_home_or_settings(_isolated_home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VERIFORGE_CONFIG", raising=False)
    monkeypatch.delenv("VERIFORGE_STORE__PATH", raising=False)
    with RunStore() as s:
        assert s.path == (Path(_isolated_home) / "runs.sqlite").resolve()
    assert (Path(_isolated_home) / "runs.sqlite").is_file()
    target = tmp_path / "elsewhere" / "x.sqlite"
    monkeypatch.setenv("VERIFORGE_STORE__PATH", str(target))
    with RunStore() as s:
        assert s.path == target.resolve()
    assert target.is_file()


def test_rejects_memory_and_non_database_files(tmp_path):
    with pytest.raises(StoreError, match="in-memory"):
        RunStore(":memory:")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not an sqlite database at all" * 200)
    with pytest.raises(StoreError):
        RunStore(junk)


def test_closed_store_refuses_use(tmp_path):
    s = RunStore(tmp_path / "r.sqlite")
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.get_evaluation("k")


# --- migrations --------------------------------------------------------------------------------

# The version-1 schema exactly as first shipped; frozen here so editing migration 1 breaks this test.
V1_SQL = """
CREATE TABLE runs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, config TEXT NOT NULL,
    config_hash TEXT NOT NULL, status TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
    finished REAL, resumes INTEGER NOT NULL DEFAULT 0, pid INTEGER, host TEXT, summary TEXT);
CREATE INDEX runs_kind_status ON runs(kind, status);
CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, kind TEXT NOT NULL,
    payload TEXT NOT NULL, created REAL NOT NULL);
CREATE INDEX events_run_kind ON events(run_id, kind);
CREATE TABLE evaluations (key TEXT PRIMARY KEY, kind TEXT NOT NULL DEFAULT '', result TEXT NOT NULL,
    created REAL NOT NULL);
CREATE TABLE run_state (run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, key TEXT NOT NULL,
    value TEXT NOT NULL, updated REAL NOT NULL, PRIMARY KEY (run_id, key));
PRAGMA user_version = 1;
"""


def _make_v1(path: Path) -> None:
    from veriforge.core.hashing import canonical_json, content_hash

    raw = sqlite3.connect(path)
    raw.executescript(V1_SQL)
    cfg = canonical_json({"lr": 0.1})
    raw.execute("INSERT INTO runs VALUES ('old-run', 'demo', ?, ?, 'running', 1.0, 1.0, NULL, 0, "
                "999999, 'nowhere', NULL)", (cfg, content_hash(cfg)))
    raw.execute("INSERT INTO events(run_id, kind, payload, created) VALUES ('old-run', 'step', '{\"i\":1}', 2)")
    raw.execute("INSERT INTO evaluations VALUES ('cand-1', 'cuda', '{\"ok\":true}', 3.0)")
    raw.execute("INSERT INTO run_state VALUES ('old-run', 'cursor', '7', 4.0)")
    raw.commit()
    raw.close()


def test_migrates_a_v1_database_and_keeps_its_data(tmp_path):
    path = tmp_path / "old.sqlite"
    _make_v1(path)
    with RunStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        run = s.get_run("old-run")
        assert run is not None and run.config == {"lr": 0.1} and run.status == "running"
        assert [e.payload for e in s.events("old-run")] == [{"i": 1}]
        # an evaluation stored before signing existed cannot be told from a forged one: a miss
        assert s.get_evaluation("cand-1") is None
        assert s.get_state("old-run", "cursor") == 7
        # tables added by later migrations work
        s.llm_cache_put("req", {"text": "hi"})
        s.put_record("memory", "t1", {"score": 1}, run_id="old-run")
        assert s.llm_cache_get("req") == {"text": "hi"}
        assert s.evaluate_once("cand-1", lambda: {"ok": "again"}) == {"ok": "again"}
        assert s.evaluate_once("cand-1", lambda: pytest.fail("must reuse the signed result")) == {"ok": "again"}
        # the old run resumes with the same config
        assert s.start_run("demo", {"lr": 0.1}, run_id="old-run") == "old-run"
        assert s.get_run("old-run").resumes == 1


def test_newer_schema_is_refused_clearly(tmp_path):
    path = tmp_path / "future.sqlite"
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(StoreError, match=rf"schema version {SCHEMA_VERSION + 1}, newer"):
        RunStore(path)


def test_failed_migration_leaves_the_file_untouched(tmp_path):
    path = tmp_path / "r.sqlite"
    RunStore(path, migrations=MIGRATIONS[:1]).close()
    broken = [*MIGRATIONS[:1], Migration(2, "good table", "CREATE TABLE extra (x INTEGER);"),
              Migration(3, "broken", "CREATE TABLE runs (x INTEGER);")]
    with pytest.raises(StoreError, match="version 3"):
        RunStore(path, migrations=broken)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
    assert raw.execute("SELECT name FROM sqlite_master WHERE name = 'extra'").fetchone() is None


def test_appended_python_migration_runs_once(tmp_path):
    path = tmp_path / "r.sqlite"
    calls = []

    def backfill(conn):
        calls.append(1)
        conn.execute("CREATE TABLE notes (n TEXT)")
        conn.execute("INSERT INTO notes VALUES ('backfilled')")

    steps = [*MIGRATIONS, Migration(len(MIGRATIONS) + 1, "notes", backfill)]
    RunStore(path, migrations=steps).close()
    with RunStore(path, migrations=steps) as s:
        assert s.schema_version == len(steps)
    assert calls == [1]
    # the shipped code does not know version N+1 and says so
    with pytest.raises(StoreError, match="newer"):
        RunStore(path)


def test_migrations_must_be_numbered_consecutively(tmp_path):
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    with pytest.raises(StoreError, match="numbered"):
        RunStore(tmp_path / "r.sqlite", migrations=[MIGRATIONS[0], Migration(3, "gap", "SELECT 1;")])


def test_split_sql_respects_semicolons_in_strings():
    assert split_sql("CREATE TABLE a (x TEXT DEFAULT ';');\nINSERT INTO a VALUES ('b;c');\n") == [
        "CREATE TABLE a (x TEXT DEFAULT ';');", "INSERT INTO a VALUES ('b;c');"]
    with pytest.raises(ValueError):
        split_sql("CREATE TABLE a (x")


# --- evaluations -------------------------------------------------------------------------------

def test_put_and_get_evaluation(store):
    assert store.get_evaluation("k") is None
    store.put_evaluation("k", {"compiled": True, "t": [1, 2]}, kind="cuda")
    assert store.get_evaluation("k") == {"compiled": True, "t": [1, 2]}
    store.put_evaluation("k", {"compiled": False})
    assert store.get_evaluation("k") == {"compiled": False}
    assert store.count_evaluations() == 1 and store.count_evaluations("cuda") == 0
    with pytest.raises(StoreError, match="JSON"):
        store.put_evaluation("bad", {"x": object()})


def test_evaluate_once_computes_once_and_returns_json_form(store):
    calls = []

    def fn():
        calls.append(1)
        return {"pair": (1, 2), "name": "v"}

    first = store.evaluate_once("k", fn, kind="demo")
    second = store.evaluate_once("k", fn, kind="demo")
    assert first == second == {"pair": [1, 2], "name": "v"}
    assert calls == [1]
    assert store.count_evaluations("demo") == 1


def test_evaluate_once_releases_claim_when_fn_raises(store):
    def boom():
        raise RuntimeError("compiler crashed")

    with pytest.raises(RuntimeError, match="compiler crashed"):
        store.evaluate_once("k", boom)
    assert store.get_evaluation("k") is None
    # released: the next caller computes at once instead of waiting for a lease
    t0 = time.monotonic()
    assert store.evaluate_once("k", lambda: {"ok": 1}, wait_timeout_s=2) == {"ok": 1}
    assert time.monotonic() - t0 < 1


def test_evaluate_once_threads_share_one_computation(store):
    calls = []
    results = []

    def slow():
        calls.append(threading.get_ident())
        time.sleep(0.3)
        return {"v": 42}

    threads = [threading.Thread(target=lambda: results.append(store.evaluate_once("k", slow)))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert results == [{"v": 42}] * 6


def _eval_in_child(path: str, counter: str, out: str, barrier) -> None:
    store = RunStore(path)
    barrier.wait()

    def slow():
        with open(counter, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        time.sleep(0.5)
        return {"by": os.getpid()}

    result = store.evaluate_once("shared-key", slow)
    Path(out).write_text(json.dumps(result))
    store.close()


def test_evaluate_once_across_processes_runs_fn_once(tmp_path):
    path = tmp_path / "runs.sqlite"
    RunStore(path).close()
    counter = tmp_path / "calls.txt"
    barrier = FORK.Barrier(3)
    procs = [FORK.Process(target=_eval_in_child, args=(str(path), str(counter), str(tmp_path / f"o{i}"),
                                                        barrier)) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    lines = counter.read_text().split()
    assert len(lines) == 1
    outs = {(tmp_path / f"o{i}").read_text() for i in range(3)}
    assert outs == {json.dumps({"by": int(lines[0])})}


def _insert_claim(path: Path, key: str, pid: int, host: str, lease_until: float) -> None:
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO eval_claims VALUES (?, 'someone', ?, ?, ?, ?)",
                (key, pid, host, lease_until, time.time()))
    raw.commit()
    raw.close()


def test_claim_of_dead_owner_is_taken_over(store):
    import socket

    _insert_claim(store.path, "k", _dead_pid(), socket.gethostname(), time.time() + 3600)
    t0 = time.monotonic()
    assert store.evaluate_once("k", lambda: {"v": 1}, wait_timeout_s=5) == {"v": 1}
    assert time.monotonic() - t0 < 2  # did not wait for the hour-long lease


def test_live_claim_is_waited_for_and_expired_lease_is_taken_over(store):
    import socket

    _insert_claim(store.path, "busy", os.getppid() or 1, socket.gethostname(), time.time() + 3600)
    with pytest.raises(StoreError, match="timed out"):
        store.evaluate_once("busy", lambda: pytest.fail("claimed by a live process"), wait_timeout_s=0.3)
    # a claim from another machine is judged by its lease only
    _insert_claim(store.path, "remote", 1, "other-host.example", time.time() + 1.0)
    with pytest.raises(StoreError, match="timed out"):
        store.evaluate_once("remote", lambda: {"v": 0}, wait_timeout_s=0.1)
    time.sleep(1.05)
    assert store.evaluate_once("remote", lambda: {"v": 2}, wait_timeout_s=2) == {"v": 2}


def test_waiter_picks_up_result_written_by_claim_owner(store):
    import socket

    _insert_claim(store.path, "k", os.getpid(), socket.gethostname(), time.time() + 3600)
    threading.Timer(0.2, lambda: RunStore(store.path).put_evaluation("k", {"from": "owner"})).start()
    assert store.evaluate_once("k", lambda: pytest.fail("must wait"), wait_timeout_s=5) == {"from": "owner"}


def test_heartbeat_keeps_a_long_evaluation_claimed(tmp_path, monkeypatch):
    s = RunStore(tmp_path / "r.sqlite", lease_s=0.6, poll_s=0.02)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(1.8)  # three leases long: without renewal a waiter would take over
        return {"v": 1}

    results = []
    owner = threading.Thread(target=lambda: results.append(s.evaluate_once("k", slow)))
    owner.start()
    time.sleep(0.1)
    other = RunStore(tmp_path / "r.sqlite", lease_s=0.6)
    # a waiter on "another host" cannot check the owner's pid: only the renewed lease protects the claim
    import veriforge.core.store as store_mod

    monkeypatch.setattr(store_mod, "_HOST", "another-host")
    results.append(other.evaluate_once("k", slow, wait_timeout_s=10))
    owner.join()
    assert calls == [1] and results == [{"v": 1}, {"v": 1}]
    s.close()
    other.close()


# --- runs, events, state -----------------------------------------------------------------------

def test_run_lifecycle(store):
    rid = store.start_run("optiml", {"budget": 10, "model": "m"})
    run = store.get_run(rid)
    assert run is not None and run.kind == "optiml" and run.status == "running" and run.resumes == 0
    assert run.config == {"budget": 10, "model": "m"} and run.pid == os.getpid()
    other = store.start_run("moa", {}, run_id="named")
    assert other == "named"
    assert [r.id for r in store.list_runs()] == [rid, "named"]
    assert [r.id for r in store.list_runs(kind="moa")] == ["named"]
    store.finish_run(rid, "done", summary={"best": 1.5})
    done = store.get_run(rid)
    assert done.status == "done" and done.finished is not None and done.summary == {"best": 1.5}
    assert [r.id for r in store.unfinished_runs()] == ["named"]
    assert [r.id for r in store.list_runs(status="done")] == [rid]
    assert store.get_run("missing") is None
    with pytest.raises(StoreError, match="unknown run"):
        store.finish_run("missing")
    with pytest.raises(StoreError, match="invalid final status"):
        store.finish_run("named", "running")


def test_resume_rules(store):
    rid = store.start_run("demo", {"a": 1, "b": [1, 2]}, run_id="r1")
    assert store.start_run("demo", {"b": [1, 2], "a": 1}, run_id="r1") == rid  # key order irrelevant
    assert store.get_run(rid).resumes == 1
    with pytest.raises(StoreError, match="differing keys: b"):
        store.start_run("demo", {"a": 1, "b": [1, 3]}, run_id="r1")
    with pytest.raises(StoreError, match="is a 'demo' run"):
        store.start_run("other", {"a": 1, "b": [1, 2]}, run_id="r1")
    store.finish_run(rid, "failed")
    assert [r.id for r in store.unfinished_runs("demo")] == ["r1"]
    store.start_run("demo", {"a": 1, "b": [1, 2]}, run_id="r1")  # failed runs may be retried
    run = store.get_run(rid)
    assert run.status == "running" and run.resumes == 2 and run.finished is None
    store.finish_run(rid, "done")
    with pytest.raises(StoreError, match="already finished"):
        store.start_run("demo", {"a": 1, "b": [1, 2]}, run_id="r1")


def test_events_order_filters_and_unknown_run(store):
    rid = store.start_run("demo", {})
    ids = [store.add_event(rid, "step" if i % 2 else "log", {"i": i}) for i in range(5)]
    assert ids == sorted(ids)
    assert [e.payload["i"] for e in store.events(rid)] == [0, 1, 2, 3, 4]
    assert [e.payload["i"] for e in store.events(rid, kind="step")] == [1, 3]
    assert [e.payload["i"] for e in store.events(rid, after=ids[2])] == [3, 4]
    assert store.events(rid)[0].run_id == rid
    with pytest.raises(StoreError, match="unknown run"):
        store.add_event("nope", "x", {})


def test_state_checkpoints(store):
    rid = store.start_run("demo", {})
    assert store.get_state(rid, "cursor", default=0) == 0
    store.set_state(rid, "cursor", 3)
    store.set_state(rid, "cursor", 4)
    store.set_state(rid, "frontier", {"nodes": ["a", "b"]})
    assert store.get_state(rid, "cursor") == 4
    assert store.state(rid) == {"cursor": 4, "frontier": {"nodes": ["a", "b"]}}
    with pytest.raises(StoreError, match="unknown run"):
        store.set_state("nope", "k", 1)


def test_transaction_is_atomic(store):
    rid = store.start_run("demo", {})
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.put_evaluation("k", {"v": 1})
            store.set_state(rid, "cursor", 1)
            raise RuntimeError("crash between the two writes")
    assert store.get_evaluation("k") is None and store.get_state(rid, "cursor") is None
    with store.transaction():
        store.put_evaluation("k", {"v": 1})
        store.set_state(rid, "cursor", 1)
    assert store.get_evaluation("k") == {"v": 1} and store.get_state(rid, "cursor") == 1


def test_llm_cache(store):
    assert store.llm_cache_get("req#0") is None
    store.llm_cache_put("req#0", {"text": "a", "usage": {"prompt": 3}})
    store.llm_cache_put("req#1", {"text": "b"})
    assert store.llm_cache_get("req#0") == {"text": "a", "usage": {"prompt": 3}}
    assert store.llm_cache_get("req#1") == {"text": "b"}
    assert store.llm_cache_clear() == 2
    assert store.llm_cache_get("req#0") is None


def test_records(store):
    rid = store.start_run("moa", {})
    store.put_record("memory", "trace-1", {"score": 0.2}, run_id=rid)
    store.put_record("memory", "trace-2", {"score": 0.9})
    store.put_record("tree", "root", {"children": []})
    store.put_record("memory", "trace-1", {"score": 0.5}, run_id=rid)  # update keeps position
    assert store.get_record("memory", "trace-1") == {"score": 0.5}
    assert store.get_record("memory", "missing", default=[]) == []
    assert [(r.key, r.value["score"]) for r in store.records("memory")] == [("trace-1", 0.5), ("trace-2", 0.9)]
    assert [r.key for r in store.records("memory", run_id=rid)] == ["trace-1"]
    assert store.delete_record("memory", "trace-2") and not store.delete_record("memory", "trace-2")
    with pytest.raises(StoreError, match="unknown run"):
        store.put_record("memory", "x", 1, run_id="nope")


# --- concurrency -------------------------------------------------------------------------------

def _writer(path: str, worker: int, count: int, barrier) -> None:
    store = RunStore(path)
    barrier.wait()
    for i in range(count):
        store.add_event("shared", "write", {"worker": worker, "i": i})
        store.put_evaluation(f"w{worker}-{i}", {"worker": worker, "i": i})
        store.put_record("ns", f"w{worker}-{i}", i)
    store.set_state("shared", f"worker-{worker}", count)
    store.close()


def test_many_processes_write_at_once_and_all_writes_land(tmp_path):
    path = tmp_path / "runs.sqlite"
    workers, count = 4, 40
    barrier = FORK.Barrier(workers)
    procs = [FORK.Process(target=_writer, args=(str(path), w, count, barrier)) for w in range(workers)]
    with RunStore(path) as s:
        s.start_run("bench", {}, run_id="shared")
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with RunStore(path) as s:
        events = s.events("shared", kind="write")
        assert len(events) == workers * count
        seen = {(e.payload["worker"], e.payload["i"]) for e in events}
        assert seen == {(w, i) for w in range(workers) for i in range(count)}
        assert s.count_evaluations() == workers * count
        assert len(s.records("ns")) == workers * count
        assert s.state("shared") == {f"worker-{w}": count for w in range(workers)}


def _opener(path: str, barrier, out) -> None:
    barrier.wait()
    try:
        with RunStore(path) as s:
            out.put(s.schema_version)
    except Exception as exc:  # report instead of dying silently
        out.put(repr(exc))


def test_processes_racing_to_create_and_migrate_a_new_store(tmp_path):
    path = str(tmp_path / "race.sqlite")
    n = 4
    barrier, out = FORK.Barrier(n), FORK.Queue()
    procs = [FORK.Process(target=_opener, args=(path, barrier, out)) for _ in range(n)]
    for p in procs:
        p.start()
    got = [out.get(timeout=60) for _ in range(n)]
    for p in procs:
        p.join(30)
    assert got == [SCHEMA_VERSION] * n


def test_threads_share_a_store(store):
    rid = store.start_run("demo", {})

    def work(t):
        for i in range(25):
            store.add_event(rid, "t", {"t": t, "i": i})

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.events(rid)) == 100


def test_pid_alive():
    assert pid_alive(os.getpid())
    assert not pid_alive(_dead_pid())
    assert not pid_alive(0)


# --- a killed run is resumed -------------------------------------------------------------------

WORKER = textwrap.dedent("""
    import os, sys, time
    from veriforge.core.store import RunStore

    path, run_id, log, n, hang_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    store = RunStore(path, lease_s=60)
    rid = store.start_run("demo", {"n": n}, run_id=run_id)
    cursor = store.get_state(rid, "cursor", 0)
    store.add_event(rid, "started", {"cursor": cursor})
    total = 0
    for i in range(n):
        def work(i=i):
            if i == hang_at:
                open(log + ".hung", "w").close()
                time.sleep(600)          # killed here, mid-evaluation, holding the claim
            with open(log, "a") as fh:
                fh.write(f"{i}\\n")
            return {"square": i * i}
        total += store.evaluate_once(f"item-{i}", work, kind="demo")["square"]
        if i >= cursor:                  # checkpoint progress atomically with its event
            with store.transaction():
                store.set_state(rid, "cursor", i + 1)
                store.add_event(rid, "item", {"i": i})
    store.finish_run(rid, "done", summary={"total": total})
""")


def test_killed_run_resumes_and_reuses_stored_evaluations(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    path, log, n, hang_at = tmp_path / "runs.sqlite", tmp_path / "work.log", 8, 5
    RunStore(path).close()
    args = [sys.executable, str(script), str(path), "run-1", str(log), str(n)]

    proc = subprocess.Popen([*args, str(hang_at)])
    deadline = time.monotonic() + 60
    while not Path(f"{log}.hung").exists():
        assert proc.poll() is None, "worker exited early"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    with RunStore(path) as s:
        with pytest.raises(StoreError, match="still running"):
            s.start_run("demo", {"n": n}, run_id="run-1")
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    with RunStore(path) as s:
        run = s.get_run("run-1")
        assert run.status == "running" and [r.id for r in s.unfinished_runs("demo")] == ["run-1"]
        assert s.get_state("run-1", "cursor") == hang_at
        assert s.count_evaluations("demo") == hang_at
    assert log.read_text().split() == [str(i) for i in range(hang_at)]

    done = subprocess.run([*args, "-1"], timeout=60)
    assert done.returncode == 0

    assert sorted(int(x) for x in log.read_text().split()) == list(range(n))  # each key exactly once
    with RunStore(path) as s:
        run = s.get_run("run-1")
        assert run.status == "done" and run.resumes == 1
        assert run.summary == {"total": sum(i * i for i in range(n))}
        assert [e.payload["cursor"] for e in s.events("run-1", kind="started")] == [0, hang_at]
        assert [e.payload["i"] for e in s.events("run-1", kind="item")] == list(range(n))
        assert s.count_evaluations("demo") == n


def _use_inherited(store: RunStore, out) -> None:
    try:
        store.put_evaluation("from-child", {"pid": os.getpid()})
        store.close()
        out.put("ok")
    except Exception as exc:
        out.put(repr(exc))


def test_forked_child_opens_its_own_connection_and_leaves_parents_alone(store):
    store.put_evaluation("from-parent", {"v": 1})  # parent's connection exists before fork
    out = FORK.Queue()
    p = FORK.Process(target=_use_inherited, args=(store, out))
    p.start()
    assert out.get(timeout=30) == "ok"
    p.join(30)
    assert store.get_evaluation("from-child") is not None  # parent still works after child closed
    store.put_evaluation("after", {"v": 2})
    assert store.count_evaluations() == 3


def test_iter_evaluations_lists_stored_results_by_kind(store):
    store.put_evaluation("k1", {"v": 1}, kind="cuda-eval")
    store.put_evaluation("k2", {"v": 2}, kind="other")
    assert [(k, kind, r["v"]) for k, kind, r in store.iter_evaluations()] == [("k1", "cuda-eval", 1),
                                                                             ("k2", "other", 2)]
    assert [k for k, _, _ in store.iter_evaluations(kind="other")] == ["k2"]


# --- integrity: damaged files are refused, unsigned or forged evaluations are misses -----------

def test_zero_length_store_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "runs.sqlite"
    path.write_bytes(b"")
    with pytest.raises(StoreError) as err:
        RunStore(path)
    message = str(err.value)
    assert str(path) in message and "empty" in message and "Nothing was changed" in message
    assert path.stat().st_size == 0  # no schema was created in it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.sqlite"]


def test_garbage_store_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "runs.sqlite"
    garbage = b"not a database, just some bytes a candidate wrote\n" * 100
    path.write_bytes(garbage)
    with pytest.raises(StoreError, match="not an SQLite database") as err:
        RunStore(path)
    assert str(path) in str(err.value) and "Nothing was changed" in str(err.value)
    assert path.read_bytes() == garbage


STORE_WRITER = textwrap.dedent("""
    import os, signal, sys
    from veriforge.core.store import RunStore

    store = RunStore(sys.argv[1])
    for i in range(int(sys.argv[2])):
        store.put_evaluation(f"key-{i}", {"i": i, "padding": "x" * 200}, kind="demo")
    if sys.argv[3] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)  # no checkpoint: the results stay in the -wal file
    store.close()
""")


def _write_in_child(tmp_path: Path, path: Path, count: int, how: str) -> None:
    """Fill a store from another process (this process has never opened, hence never checked, it)."""
    script = tmp_path / "writer.py"
    script.write_text(STORE_WRITER)
    proc = subprocess.run([sys.executable, str(script), str(path), str(count), how], timeout=60)
    assert proc.returncode == (-signal.SIGKILL if how == "kill" else 0)


def test_truncated_store_is_refused_not_reinitialised(tmp_path):
    path = tmp_path / "runs.sqlite"
    _write_in_child(tmp_path, path, 300, "close")
    size = path.stat().st_size
    assert size > 16 * 4096 and not Path(f"{path}-wal").exists()
    with open(path, "r+b") as fh:
        fh.truncate(size // 2)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="damaged") as err:
        RunStore(path)
    assert str(path) in str(err.value) and "Nothing was changed" in str(err.value)
    assert path.read_bytes() == before


def test_store_with_a_wal_file_alongside_opens_normally(tmp_path):
    path = tmp_path / "runs.sqlite"
    _write_in_child(tmp_path, path, 50, "kill")
    wal = Path(f"{path}-wal")
    assert wal.exists() and wal.stat().st_size > 0  # committed results live only in the WAL
    with RunStore(path) as s:
        assert s.count_evaluations("demo") == 50
        assert s.get_evaluation("key-49") == {"i": 49, "padding": "x" * 200}


def _raw(path: Path, sql: str, params: tuple = ()) -> None:
    """Write the store behind the harness's back, as a candidate process with access could."""
    raw = sqlite3.connect(path)
    raw.execute(sql, params)
    raw.commit()
    raw.close()


def test_evaluation_edited_outside_the_harness_is_a_miss_and_reevaluated(store, caplog):
    store.put_evaluation("cand", {"correct": False, "speedup": 0.9}, kind="cuda")
    _raw(store.path, "UPDATE evaluations SET result = ? WHERE key = 'cand'",
         (json.dumps({"correct": True, "speedup": 1000.0}, separators=(",", ":"), sort_keys=True),))
    with caplog.at_level("WARNING", logger="veriforge.core.store"):
        assert store.get_evaluation("cand") is None
    assert "cand" in caplog.text and "not evaluated" in caplog.text
    assert list(store.iter_evaluations()) == [] and store.count_evaluations() == 0
    calls = []

    def evaluate():
        calls.append(1)
        return {"correct": False, "speedup": 0.9}

    assert store.evaluate_once("cand", evaluate, kind="cuda") == {"correct": False, "speedup": 0.9}
    assert calls == [1]  # re-evaluated, and the forged record overwritten with a signed one
    assert store.get_evaluation("cand") == {"correct": False, "speedup": 0.9}
    assert store.evaluate_once("cand", lambda: pytest.fail("now a trusted hit")) == {"correct": False,
                                                                                     "speedup": 0.9}


def test_forged_or_transplanted_signatures_are_misses(store):
    import hashlib
    import hmac

    forged = json.dumps({"correct": True}, separators=(",", ":"))
    # a signature made with a key the harness does not have
    fake = hmac.new(os.urandom(32), b"cand-1" + forged.encode(), hashlib.sha256).hexdigest()
    _raw(store.path, "INSERT INTO evaluations(key, kind, result, created, sig) VALUES ('cand-1', '', ?, 1, ?)",
         (forged, fake))
    # a genuine signature copied from another record: it signs that record's key and result only
    store.put_evaluation("real", {"correct": True})
    _raw(store.path, "INSERT INTO evaluations(key, kind, result, created, sig) "
         "SELECT 'cand-2', kind, result, created, sig FROM evaluations WHERE key = 'real'")
    # an unsigned record (as written before signatures, or by anything but the harness)
    _raw(store.path, "INSERT INTO evaluations(key, kind, result, created) VALUES ('cand-3', '', ?, 1)", (forged,))
    # values of the wrong types (SQLite columns accept anything): a miss, not a crash
    _raw(store.path, "INSERT INTO evaluations(key, kind, result, created, sig) VALUES ('cand-4', 5, X'7b7d', 1, 7)")
    for key in ("cand-1", "cand-2", "cand-3", "cand-4"):
        assert store.get_evaluation(key) is None, key
        assert store.evaluate_once(key, lambda: {"correct": False}) == {"correct": False}
    assert sorted(k for k, _, _ in store.iter_evaluations()) == ["cand-1", "cand-2", "cand-3", "cand-4", "real"]
    assert store.get_evaluation("real") == {"correct": True}


def test_signatures_depend_on_the_installation_key(tmp_path, monkeypatch):
    path = tmp_path / "shared.sqlite"
    with RunStore(path) as s:
        s.put_evaluation("k", {"v": 1})
        assert s.get_evaluation("k") == {"v": 1}
    monkeypatch.setenv("VERIFORGE_HOME", str(tmp_path / "other-home"))
    with RunStore(path) as s:
        assert s.get_evaluation("k") is None  # another installation's key: not ours to trust
