"""The run store's schema, as an ordered, append-only list of migrations.

A store file records the version it is at (``PRAGMA user_version``); opening it applies every
migration above that version, in order, inside one write transaction, so a half-migrated file
cannot exist and two processes opening an old file at once migrate it exactly once.

To add tables for a new system, append ``Migration(version=<last + 1>, ...)`` at the end of
:data:`MIGRATIONS`. Never edit or reorder a migration that has shipped: files in the wild are
already past it and would never see the change.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "split_sql"]


@dataclass(frozen=True)
class Migration:
    """One forward step of the schema: SQL statements, or a function for data migrations.

    A function receives the connection inside the migration's transaction and must not commit.
    """

    version: int
    description: str
    sql: str | Callable[[sqlite3.Connection], None]

    def apply(self, conn: sqlite3.Connection) -> None:
        if callable(self.sql):
            self.sql(conn)
            return
        for statement in split_sql(self.sql):
            conn.execute(statement)


def split_sql(script: str) -> list[str]:
    """Split a SQL script into complete statements.

    ``executescript`` would be simpler but it COMMITs first, which would break the all-or-nothing
    migration transaction; ``sqlite3.complete_statement`` handles semicolons inside strings/triggers.
    """
    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip().strip(";").strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        raise ValueError(f"incomplete SQL statement in migration: {current.strip()[:80]!r}")
    return statements


MIGRATIONS: list[Migration] = [
    Migration(1, "runs, events, evaluations, run state", """
        CREATE TABLE runs (
            id          TEXT PRIMARY KEY,
            kind        TEXT NOT NULL,
            config      TEXT NOT NULL,
            config_hash TEXT NOT NULL,
            status      TEXT NOT NULL,
            created     REAL NOT NULL,
            updated     REAL NOT NULL,
            finished    REAL,
            resumes     INTEGER NOT NULL DEFAULT 0,
            pid         INTEGER,
            host        TEXT,
            summary     TEXT
        );
        CREATE INDEX runs_kind_status ON runs(kind, status);
        CREATE TABLE events (
            id      INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            kind    TEXT NOT NULL,
            payload TEXT NOT NULL,
            created REAL NOT NULL
        );
        CREATE INDEX events_run_kind ON events(run_id, kind);
        CREATE TABLE evaluations (
            key     TEXT PRIMARY KEY,
            kind    TEXT NOT NULL DEFAULT '',
            result  TEXT NOT NULL,
            created REAL NOT NULL
        );
        CREATE TABLE run_state (
            run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            key     TEXT NOT NULL,
            value   TEXT NOT NULL,
            updated REAL NOT NULL,
            PRIMARY KEY (run_id, key)
        );
    """),
    Migration(2, "evaluation claims (evaluate_once across processes), LLM request cache", """
        CREATE TABLE eval_claims (
            key         TEXT PRIMARY KEY,
            owner       TEXT NOT NULL,
            pid         INTEGER NOT NULL,
            host        TEXT NOT NULL,
            lease_until REAL NOT NULL,
            claimed     REAL NOT NULL
        );
        CREATE TABLE llm_cache (
            key     TEXT PRIMARY KEY,
            value   TEXT NOT NULL,
            created REAL NOT NULL
        );
    """),
    Migration(3, "namespaced JSON records (MoA memory, search trees)", """
        CREATE TABLE records (
            namespace TEXT NOT NULL,
            key       TEXT NOT NULL,
            run_id    TEXT REFERENCES runs(id) ON DELETE SET NULL,
            value     TEXT NOT NULL,
            created   REAL NOT NULL,
            updated   REAL NOT NULL,
            PRIMARY KEY (namespace, key)
        );
        CREATE INDEX records_namespace_run ON records(namespace, run_id);
    """),
    Migration(4, "evaluation signatures (HMAC with the installation's secret key; NULL: untrusted)", """
        ALTER TABLE evaluations ADD COLUMN sig TEXT;
    """),
]

SCHEMA_VERSION: int = MIGRATIONS[-1].version
