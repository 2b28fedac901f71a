"""The PostgreSQL schema of the team store, versioned, and its upgrades (store layer).

Tables (all prefixed ``skillnb_``):

``skillnb_schema``
    one row: the schema version this database is at.
``skillnb_runs``
    one row per run name, written by the run's first append (version 3: the run's head is the
    last ``seq`` of its events, not a column every append would have to update).
``skillnb_events``
    the append-only journal of every run, keyed by ``(run, seq)``. ``line`` is the event's
    exact journal text (what readers decode, so a run moves between a sidecar and a database
    byte for byte), stored once (version 4: versions 1 to 3 kept a second copy of the payload
    as JSONB, which doubled the log written per event and the server's work per append).
    The primary key is the compare-and-swap: an append inserts ``seq = expected + 1 ...``
    only when event ``expected`` is there, and a ``seq`` taken by another writer refuses it.
``skillnb_event_data`` (version 4)
    a view of the events with their payload as JSONB (``data``), for queries and reports,
    parsed from the line when read (``NULL`` for the rare payload JSONB cannot hold, a string
    with a NUL character): ``SELECT data -> 'fact' ->> 'key' FROM skillnb_event_data ...``.
``skillnb_snapshots``
    the compacted state of a run at a version (``body`` exact, ``state`` JSONB).
``skillnb_blobs``
    content-addressed large values, shared by all runs: ``ref`` is ``sha256:<hex>``.
``skillnb_asks`` (version 6)
    the approval requests and follow-ups that may still wait for a person, one row per
    ``(run, id)``, kept by a trigger on the events that open and close them (a transition
    drops the run's approval requests: they were asked in a state the run left). Listings
    (``skillnb runs --waiting``, ``skillnb inbox``) start from it, so they cost what waits,
    not how many runs the database holds; what it lists is then checked against the run's
    own fold. Version 6 also adds the partial index ``skillnb_events_listing`` on
    ``(run, seq)`` of the event types a listing row depends on
    (:data:`skillnb.core.views.listing.LISTING_TYPES` and ``batch.item_done``), so a row is read
    without the run's other events.
``skillnb_items`` (version 2)
    the items of every batch with who holds each and until when: consumers on any machine
    take the next free item with ``SELECT ... FOR UPDATE SKIP LOCKED`` (``skillnb_take_item``),
    so they never wait for each other to pick one. ``done`` follows the journal: the append
    that records ``batch.item_done`` sets it in the same transaction.

Appends are single statements the client sends (:mod:`skillnb.store.postgres.append`), one
transaction each: they take the run's transaction-scoped advisory lock
(:data:`LOCK_CLASS`, ``hashtext(run)``), insert the events and, when someone listens to the
run, ``NOTIFY skillnb_changes`` with the run name. Listeners hold a shared session lock on
(:data:`LISTEN_CLASS`, ``hashtext(run)``); an append that cannot take it exclusively knows
someone listens (a notifying commit waits for every other one on the server, which writers
nobody watches need not pay). ``skillnb_refused(run, after, most)`` tells a refused append
the head and the lines after ``after`` when they are at most ``most``; being volatile, it
reads with a snapshot of its own, which sees the writer that took the number (the append's
statement began before that writer committed). Versions 1 and 2 did this in a PL/pgSQL function,
``skillnb_append``, that also moved a version column of ``skillnb_runs`` and looked listeners
up in a table; version 3 drops the three, and the foreign key from events to runs.
Version 4 drops the events' ``data`` column (the view reads it from the line instead); the
bytes old rows held stay on disk until PostgreSQL rewrites the table (``VACUUM FULL``).
Version 5 makes ``skillnb_events`` append-only (a trigger refuses ``UPDATE``, ``DELETE`` and
``TRUNCATE``) and allows ``run.created`` only as event 1 (a check). Rows carry no checksum:
the database, its roles and its own page and WAL checks are what is trusted; a sidecar's
``crc`` is recomputed from the line when a run is pulled, so the line, not the checksum, is
what moves byte for byte.

:func:`upgrade` creates or migrates the schema (``skillnb db upgrade URL``); :func:`check`
refuses a database whose schema is newer than this skillnb knows, and one that is older with
the command that upgrades it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skillnb.errors import SkillnbError

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "CHANNEL",
    "LISTEN_CLASS",
    "LOCK_CLASS",
    "SCHEMA_VERSION",
    "NewerSchemaError",
    "OlderSchemaError",
    "check",
    "upgrade",
]

SCHEMA_VERSION = 6
"""The schema version this skillnb writes and reads."""

LOCK_CLASS = 0x536B4E62  # "SkNb": the first key of every advisory lock skillnb takes
"""The first half of skillnb's advisory-lock keys; the second is ``hashtext(run name)``."""

LISTEN_CLASS = LOCK_CLASS + 1
"""The first half of the keys listeners hold shared (the second is ``hashtext(run name)``)."""

CHANNEL = "skillnb_changes"
"""The NOTIFY channel; the payload is the name of the run that changed."""

_SCHEMA_LOCK = 0  # second key of the lock that serialises schema upgrades

_V1 = """
CREATE TABLE skillnb_schema (
    version integer NOT NULL,
    upgraded_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE skillnb_runs (
    name text PRIMARY KEY,
    version bigint NOT NULL DEFAULT 0 CHECK (version >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE skillnb_events (
    run text NOT NULL REFERENCES skillnb_runs (name),
    seq bigint NOT NULL CHECK (seq > 0),
    type text NOT NULL,
    at timestamptz NOT NULL,
    data jsonb,
    line text NOT NULL,
    PRIMARY KEY (run, seq)
);
CREATE TABLE skillnb_snapshots (
    run text PRIMARY KEY REFERENCES skillnb_runs (name),
    version bigint NOT NULL,
    state jsonb,
    body text NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE skillnb_blobs (
    ref text PRIMARY KEY CHECK (ref ~ '^sha256:[0-9a-f]{64}$'),
    data bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE FUNCTION skillnb_append(
    p_run text, p_expected bigint, p_types text[], p_ats text[], p_lines text[],
    p_plain boolean[]
) RETURNS TABLE (ok boolean, head bigint) LANGUAGE plpgsql AS $fn$
DECLARE
    cur bigint;
    n integer := coalesce(cardinality(p_lines), 0);
BEGIN
    PERFORM pg_advisory_xact_lock(1399541346, hashtext(p_run));
    SELECT r.version INTO cur FROM skillnb_runs AS r WHERE r.name = p_run FOR UPDATE;
    IF NOT FOUND THEN
        cur := 0;
        IF p_expected = 0 AND n > 0 THEN
            INSERT INTO skillnb_runs (name, version) VALUES (p_run, 0);
        END IF;
    END IF;
    IF cur <> p_expected OR n = 0 THEN
        RETURN QUERY SELECT cur = p_expected, cur;
        RETURN;
    END IF;
    INSERT INTO skillnb_events (run, seq, type, at, data, line)
    SELECT p_run, p_expected + i, p_types[i], p_ats[i]::timestamptz,
           CASE WHEN p_plain[i] THEN (p_lines[i]::jsonb) -> 'data' END, p_lines[i]
    FROM generate_series(1, n) AS i;
    UPDATE skillnb_runs AS r SET version = p_expected + n, updated_at = now()
    WHERE r.name = p_run;
    PERFORM pg_notify('skillnb_changes', p_run);
    RETURN QUERY SELECT true, p_expected + n;
END
$fn$;
INSERT INTO skillnb_schema (version) VALUES (1);
"""

_V2 = """
DROP FUNCTION skillnb_append(text, bigint, text[], text[], text[], boolean[]);
CREATE FUNCTION skillnb_append(
    p_run text, p_expected bigint, p_events text,
    OUT ok boolean, OUT head bigint, OUT missed text[]
) LANGUAGE plpgsql AS $fn$
DECLARE
    n integer := json_array_length(p_events::json);
BEGIN
    PERFORM pg_advisory_xact_lock(1399541346, hashtext(p_run));
    UPDATE skillnb_runs AS r SET version = p_expected + n, updated_at = now()
    WHERE r.name = p_run AND r.version = p_expected AND n > 0;
    IF NOT FOUND THEN
        SELECT r.version INTO head FROM skillnb_runs AS r WHERE r.name = p_run;
        IF NOT FOUND THEN
            head := 0;
            IF p_expected = 0 AND n > 0 THEN
                INSERT INTO skillnb_runs (name, version) VALUES (p_run, n);
            END IF;
        END IF;
        IF head <> p_expected OR n = 0 THEN
            ok := head = p_expected;
            IF head > p_expected AND head - p_expected <= 100 THEN
                -- What the writer missed, so that it catches up without asking again.
                SELECT array_agg(v.line ORDER BY v.seq) INTO missed
                FROM skillnb_events AS v
                WHERE v.run = p_run AND v.seq > p_expected AND v.seq <= head;
            END IF;
            RETURN;
        END IF;
    END IF;
    INSERT INTO skillnb_events (run, seq, type, at, data, line)
    SELECT p_run, p_expected + i, e ->> 'type', (e ->> 'at')::timestamptz,
           CASE WHEN strpos(e::text, '\\u0000') = 0 THEN (e -> 'data')::jsonb END, e::text
    FROM json_array_elements(p_events::json) WITH ORDINALITY AS u (e, i);
    IF strpos(p_events, '"type":"batch.item_done"') > 0 THEN
        UPDATE skillnb_items AS t SET done = true, owner = NULL, owner_name = NULL, until = NULL
        FROM json_array_elements(p_events::json) AS e
        WHERE e ->> 'type' = 'batch.item_done' AND t.run = p_run
          AND t.batch = e -> 'data' ->> 'batch' AND t.item = e -> 'data' ->> 'item';
    END IF;
    IF EXISTS (SELECT 1 FROM skillnb_listeners AS l WHERE l.run = p_run) THEN
        PERFORM pg_notify('skillnb_changes', p_run);
    END IF;
    ok := true;
    head := p_expected + n;
END
$fn$;
CREATE UNLOGGED TABLE skillnb_listeners (
    run text NOT NULL,
    pid integer NOT NULL,
    since timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run, pid)
);
CREATE TABLE skillnb_items (
    run text NOT NULL REFERENCES skillnb_runs (name),
    batch text NOT NULL,
    item text NOT NULL,
    pos integer NOT NULL,
    done boolean NOT NULL DEFAULT false,
    owner text,
    owner_name text,
    until timestamptz,
    PRIMARY KEY (run, batch, item)
);
CREATE INDEX skillnb_items_open ON skillnb_items (run, batch, pos) WHERE NOT done;
CREATE FUNCTION skillnb_take_item(
    p_run text, p_batch text, p_owner text, p_name text, p_lease double precision,
    p_skip text, OUT taken text
) LANGUAGE plpgsql AS $fn$
BEGIN
    -- A claim lost in a crash only frees its item again: no need to wait for the disk.
    SET LOCAL synchronous_commit = off;
    SELECT t.item INTO taken FROM skillnb_items AS t
    WHERE t.run = p_run AND t.batch = p_batch AND NOT t.done
      AND (t.owner IS NULL OR t.until < now() OR t.owner = p_owner)
      AND t.item NOT IN (SELECT json_array_elements_text(p_skip::json))
    ORDER BY t.pos LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        UPDATE skillnb_items AS t SET owner = p_owner, owner_name = p_name,
            until = now() + make_interval(secs => p_lease)
        WHERE t.run = p_run AND t.batch = p_batch AND t.item = taken;
    END IF;
END
$fn$;
"""
# The functions spell LOCK_CLASS and CHANNEL out; tests check that they agree.

_V3 = """
DROP FUNCTION skillnb_append(text, bigint, text);
DROP TABLE skillnb_listeners;
ALTER TABLE skillnb_events DROP CONSTRAINT skillnb_events_run_fkey;
ALTER TABLE skillnb_runs DROP COLUMN version, DROP COLUMN updated_at;
CREATE FUNCTION skillnb_refused(
    p_run text, p_after bigint, p_most integer, OUT head bigint, OUT missed text[]
) LANGUAGE sql VOLATILE AS $fn$
    SELECT h.head, CASE WHEN h.head > p_after AND h.head - p_after <= p_most THEN
        ARRAY(SELECT v.line FROM skillnb_events AS v
              WHERE v.run = p_run AND v.seq > p_after AND v.seq <= h.head ORDER BY v.seq)
    END
    FROM (SELECT coalesce(max(e.seq), 0) AS head FROM skillnb_events AS e
          WHERE e.run = p_run) AS h
$fn$;
"""
# Appends no longer update a row of skillnb_runs (nor lock it, as the foreign key check of
# every inserted event did): the head is max(seq), read through the primary key.

_V4 = """
ALTER TABLE skillnb_events DROP COLUMN data;
CREATE VIEW skillnb_event_data AS
SELECT e.run, e.seq, e.type, e.at,
       CASE WHEN strpos(e.line, '\\u0000') = 0 THEN e.line::jsonb -> 'data' END AS data, e.line
FROM skillnb_events AS e;
"""
# Each event is stored once, as its line; the payload as JSONB is a view, paid for by the
# queries that read it rather than by every append.

_V5 = """
CREATE FUNCTION skillnb_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    RAISE EXCEPTION 'skillnb_events is append-only: % refused', TG_OP
        USING ERRCODE = 'integrity_constraint_violation',
              HINT = 'a run''s events are never changed, removed or renumbered';
END
$fn$;
CREATE TRIGGER skillnb_events_append_only BEFORE UPDATE OR DELETE ON skillnb_events
    FOR EACH ROW EXECUTE FUNCTION skillnb_append_only();
CREATE TRIGGER skillnb_events_no_truncate BEFORE TRUNCATE ON skillnb_events
    FOR EACH STATEMENT EXECUTE FUNCTION skillnb_append_only();
ALTER TABLE skillnb_events ADD CONSTRAINT skillnb_events_created_first
    CHECK (type <> 'run.created' OR seq = 1) NOT VALID;
"""
# The database is trusted as a whole (its roles decide who may write), so rows carry no
# checksum: a role that may edit a row may recompute any checksum stored beside it, and the
# server checks its own pages and WAL. What the schema enforces instead is what skillnb's own
# writers never do: an event row is never updated, deleted or truncated (so a sequence number
# is never reused: the next append after a deleted row would have taken it), and a run is
# created only by its first event. NOT VALID: rows written before are not re-checked.
_ASK_TYPES = (
    "'approval.requested', 'approval.decided', 'approval.consumed', 'approval.expired', "
    "'followup.opened', 'followup.resolved', 'transition.fired'"
)
_INDEXED_TYPES = (
    "'run.created', 'workflow.bound', 'transition.fired', 'gate.reported', "
    "'approval.requested', 'approval.decided', 'approval.consumed', 'approval.expired', "
    "'followup.opened', 'followup.resolved', 'batch.declared', 'batch.item_done'"
)
# The payload as JSONB; a NUL escape (which JSONB cannot hold) read as U+FFFD: always valid.
_DATA = "(replace({line}, '\\u0000', '\\ufffd')::jsonb -> 'data')"

_V6 = f"""
CREATE INDEX skillnb_events_listing ON skillnb_events (run, seq)
    WHERE type IN ({_INDEXED_TYPES});
CREATE TABLE skillnb_asks (
    run text NOT NULL,
    id text NOT NULL,
    kind text NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (run, id)
);
CREATE FUNCTION skillnb_track_asks() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    d jsonb := {_DATA.format(line="NEW.line")};
BEGIN
    IF NEW.type = 'approval.requested' OR NEW.type = 'followup.opened' THEN
        INSERT INTO skillnb_asks (run, id, kind, seq)
        VALUES (NEW.run,
                coalesce(d -> 'approval' ->> 'id', d -> 'follow_up' ->> 'id', ''),
                CASE WHEN NEW.type = 'approval.requested' THEN 'approval' ELSE 'follow_up' END,
                NEW.seq)
        ON CONFLICT (run, id) DO UPDATE SET kind = EXCLUDED.kind, seq = EXCLUDED.seq;
    ELSIF NEW.type = 'transition.fired' THEN
        DELETE FROM skillnb_asks AS a WHERE a.run = NEW.run AND a.kind = 'approval';
    ELSE
        DELETE FROM skillnb_asks AS a WHERE a.run = NEW.run AND a.id = d ->> 'id';
    END IF;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER skillnb_asks_track AFTER INSERT ON skillnb_events FOR EACH ROW
    WHEN (NEW.type IN ({_ASK_TYPES})) EXECUTE FUNCTION skillnb_track_asks();
INSERT INTO skillnb_asks (run, id, kind, seq)
SELECT DISTINCT ON (a.run, a.id) a.run, a.id, a.kind, a.seq FROM (
    SELECT e.run, e.seq,
           CASE WHEN e.type = 'approval.requested' THEN 'approval' ELSE 'follow_up' END AS kind,
           coalesce({_DATA.format(line="e.line")} -> 'approval' ->> 'id',
                    {_DATA.format(line="e.line")} -> 'follow_up' ->> 'id', '') AS id
    FROM skillnb_events AS e WHERE e.type IN ('approval.requested', 'followup.opened')
) AS a
WHERE NOT EXISTS (
    SELECT 1 FROM skillnb_events AS c
    WHERE c.run = a.run AND c.seq > a.seq
      AND c.type IN ({_ASK_TYPES})
      AND ((c.type = 'transition.fired' AND a.kind = 'approval')
           OR (c.type NOT IN ('transition.fired', 'approval.requested', 'followup.opened')
               AND {_DATA.format(line="c.line")} ->> 'id' = a.id))
)
ORDER BY a.run, a.id, a.seq DESC;
"""  # noqa: S608 - built from this module's constants
# Appends pay for the trigger only on the rows it names (its WHEN clause is checked first),
# and for the partial index only on the rows of its types.

MIGRATIONS: dict[int, str] = {0: _V1, 1: _V2, 2: _V3, 3: _V4, 4: _V5, 5: _V6}
"""SQL that takes the schema from version ``n`` (the key) to ``n + 1``; 0 is an empty database."""


class NewerSchemaError(SkillnbError):
    """The database was set up by a newer skillnb; this one refuses to touch it.

    Attributes:
        location: the database, password redacted.
        found: its schema version.
        supported: the newest version this skillnb knows.

    """

    def __init__(self, location: str, found: int) -> None:
        self.location = location
        self.found = found
        self.supported = SCHEMA_VERSION
        super().__init__(
            f"{location}: the skillnb schema is at version {found}, newer than this skillnb "
            f"knows (up to {SCHEMA_VERSION}); upgrade skillnb (pip install -U skillnb) to use it"
        )


class OlderSchemaError(SkillnbError):
    """The database's schema is older than this skillnb's: it needs ``skillnb db upgrade``."""

    def __init__(self, location: str, found: int) -> None:
        self.location = location
        self.found = found
        super().__init__(
            f"{location}: the skillnb schema is at version {found}, older than this skillnb's "
            f"{SCHEMA_VERSION}; run `skillnb db upgrade URL` to migrate it"
        )


def current_version(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
    """The schema version of the database behind ``conn`` (0 when skillnb never set it up)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables "
        "WHERE schemaname = current_schema() AND tablename = 'skillnb_schema')"
    ).fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute("SELECT max(version) FROM skillnb_schema").fetchone()
    return int(found[0]) if found and found[0] is not None else 0


def check(conn: psycopg.Connection[tuple[Any, ...]], location: str) -> int:
    """Make sure the schema is usable: create it in an empty database, refuse other versions.

    Returns:
        The schema version (always :data:`SCHEMA_VERSION` on return).

    Raises:
        NewerSchemaError: a newer skillnb set the database up.
        OlderSchemaError: the schema needs ``skillnb db upgrade``.

    """
    found = current_version(conn)
    if found == SCHEMA_VERSION:
        return found
    if found > SCHEMA_VERSION:
        raise NewerSchemaError(location, found)
    if found == 0:
        return upgrade(conn, location)[1]
    raise OlderSchemaError(location, found)


def upgrade(conn: psycopg.Connection[tuple[Any, ...]], location: str) -> tuple[int, int]:
    """Create or migrate the schema, in one transaction, one upgrader at a time.

    Returns:
        The versions before and after.

    Raises:
        NewerSchemaError: a newer skillnb set the database up (nothing is changed).

    """
    # The lock is taken before the transaction starts, so that the transaction sees (catalog
    # caches included) what an upgrader that held the lock before committed.
    conn.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_CLASS, _SCHEMA_LOCK))
    try:
        with conn.transaction():
            before = current_version(conn)
            if before > SCHEMA_VERSION:
                raise NewerSchemaError(location, before)
            for version in range(before, SCHEMA_VERSION):
                conn.execute(MIGRATIONS[version].encode())
                if version > 0:
                    conn.execute("UPDATE skillnb_schema SET version = %s", (version + 1,))
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, _SCHEMA_LOCK))
    return before, SCHEMA_VERSION
