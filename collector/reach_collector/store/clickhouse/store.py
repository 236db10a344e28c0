"""``ClickHouseStore``: the collector's ``TraceStore`` on a ClickHouse server or cluster (or chdb).

Any number of collectors may share one database: nothing lives in the collector, every read asks
ClickHouse. A write returns once ClickHouse has acknowledged the insert (through a Distributed
table synchronously: the rows are on their shards), and raises otherwise, so the ingest path
answers 503 and the exporter retries; nothing acknowledged is ever only in the collector.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

import reach_collector.store.clickhouse.reads as reads
from reach_collector.store.alert_tables import open_episode_keys
from reach_collector.store.base import TraceFilter, WriteProfile
from reach_collector.store.clickhouse.bind import bind
from reach_collector.store.clickhouse.convert import insert_columns
from reach_collector.store.clickhouse.driver import Backend, DriverBackend
from reach_collector.store.clickhouse.migrate import cluster_hosts, migrate
from reach_collector.store.clickhouse.native import span_block
from reach_collector.store.clickhouse.schema import (
    AUX_TYPES,
    DAY_NS,
    HOUR_NS,
    INSERT_COLUMNS,
    KV_COLUMNS,
    SCHEMA_VERSION,
    SPAN_TYPES,
    Layout,
)
from reach_collector.text.clickhouse_url import ClickHouseURL, parse_clickhouse_url

__all__ = ["ClickHouseStore"]

log = logging.getLogger(__name__)

# Current ClickHouse refuses an insert block that touches more partitions than this (its
# max_partitions_per_insert_block, a setting 18.16 does not know): larger spreads go in pieces.
MAX_PARTITIONS_PER_INSERT: Final = 100
_INSERT_TYPES: Final = (*SPAN_TYPES.values(), *(kind for _, kind in KV_COLUMNS))
# Side tables pruned by partition at retention (alert transitions and acks go row by row: an
# episode still firing must outlive any cutoff, see _prune_alert_history).
_PRUNED_SIDE_TABLES: Final = ("heartbeats", "alert_deliveries", "evaluations")


class ClickHouseStore:
    """Spans, the trace lookup and the side tables in one ClickHouse database."""

    dialect = "clickhouse"  # the SQL the query modules speak to it (reach_collector.store.dialect)
    # For the ingest writer (ingest.writer): ClickHouse takes concurrent inserts, each on its own
    # connection (one per thread, driver.DriverBackend). Each insert costs 18.16 a part (≈ 70 column
    # files, then merges) whatever its size — ≈ 20 ms of its CPU, as much as ≈ 5 000 rows' own
    # (measured) — so a commit is worth it from 8192 spans, and smaller ones wait up to 30 ms for
    # the requests of exporters just acknowledged.
    # The trace summaries come from the materialized view over the span rows (schema.TRACE_AGGREGATES):
    # the decoder's parts are not built for it.
    write_profile = WriteProfile(
        concurrent_writes=2, commit_spans=8192, group_commit_s=0.030, computes_summary=True
    )
    # the lookup's states merged per trace (store.base.TraceStore.trace_bounds)
    trace_bounds = (
        "(SELECT trace_id, minMerge(first_start_ns) AS first_start_ns,"
        " maxMerge(last_end_ns) AS last_end_ns FROM traces GROUP BY trace_id)"
    )

    def __init__(self, url: str | ClickHouseURL, *, backend: Backend | None = None) -> None:
        """Connect, create the database and tables if missing and migrate them (on every shard
        of a cluster). Raises StoreUnavailable when ClickHouse cannot be reached, StoreError when
        it refuses (credentials, a cluster it does not know)."""
        self.url = url if isinstance(url, ClickHouseURL) else parse_clickhouse_url(url)
        self.layout = Layout(self.url.database, self.url.cluster)
        self.where = self.url.display()
        self._shards: list[Backend] = []
        if backend is not None:  # chdb, or a caller's own connection: one node
            if self.url.cluster:
                raise ValueError("a cluster needs the servers themselves, not a backend")
            self._backend = backend
            migrate(backend.execute, self.layout, self.where)
            self._shards = [backend]
        else:
            setup = DriverBackend(self.url, database="default")
            try:
                hosts = [(self.url.host, self.url.port)]
                if self.url.cluster:
                    hosts = cluster_hosts(setup.execute, self.url.cluster, self.where)
                for host, port in hosts:
                    shard = DriverBackend(self.url, host=host, port=port, database="default")
                    try:
                        migrate(shard.execute, self.layout, f"{self.where} (shard {host}:{port})")
                    finally:
                        shard.close()
            finally:
                setup.close()
            self._backend = DriverBackend(self.url)
            self._shards = [
                DriverBackend(self.url, host=h, port=p) if self.url.cluster else self._backend
                for h, p in hosts
            ]
        self._insert_settings = {"insert_distributed_sync": 1} if self.url.cluster else None
        self._closed = False
        self.server_version = str(self._backend.execute("SELECT version()")[0][0])

    def memory_bytes(self) -> None:
        """The server's memory is its own (ClickHouse's system tables show it): nothing here."""
        return None

    def describe(self) -> str:
        """Where the data lives, for the startup line: the URL without its password, the server's
        version, the schema's, and in a cluster how many servers hold the shards."""
        servers = f", cluster {self.url.cluster} of {len(self._shards)} servers" if self.url.cluster else ""
        return f"{self.where} (ClickHouse {self.server_version}, schema {SCHEMA_VERSION}{servers})"

    @classmethod
    def in_process(cls, path: str | Path, database: str = "reach") -> ClickHouseStore:
        """A store on current ClickHouse in this process (chdb), in a data directory: what the
        tests run the same schema and queries on, beside 18.16."""
        from reach_collector.store.clickhouse.chdb_backend import ChdbBackend

        url = ClickHouseURL(host="localhost", database=database)
        return cls(url, backend=ChdbBackend(path, database))

    def __repr__(self) -> str:
        return f"ClickHouseStore({self.where})"

    # --- writing (the writer thread) -------------------------------------------------------------
    def write(self, table: pa.Table, parts: pa.Table) -> None:
        """Insert the span rows; the lookup rows come from the materialized view in the same
        insert, so ``parts`` are not read (the decoder builds none for this store:
        ``write_profile.computes_summary``)."""
        if table.num_rows == 0:
            return
        insert_block = getattr(self._backend, "insert_block", None)
        for piece in _by_partitions(table):
            if insert_block is not None:  # a server: the columns in the wire format (native)
                insert_block("spans", span_block(piece), self._insert_settings)
            else:
                self._backend.insert(
                    "spans", INSERT_COLUMNS, insert_columns(piece), _INSERT_TYPES, self._insert_settings
                )

    def maintain(self, idle: bool) -> None:
        """Nothing to do between commits: ClickHouse merges parts by itself."""

    def delete_older_than(self, cutoff_ns: int) -> int:
        """Retention by whole partitions: an hour of span end times goes (with its lookup rows)
        once it ended before ``cutoff_ns`` — so a span is kept at most an hour past the window,
        and never one that ended after the cutoff; heartbeats, delivery attempts and evaluations
        go by whole UTC days older than the cutoff. Returns the spans dropped."""
        dropped = 0
        spans, traces = self.layout.local("spans"), self.layout.local("traces")
        for shard in self._shards:
            rows = shard.execute(
                bind(
                    f"SELECT intDiv(end_ns, {HOUR_NS}) AS hour, count() FROM {spans} "
                    "WHERE end_ns < ? GROUP BY hour ORDER BY hour",
                    [cutoff_ns - cutoff_ns % HOUR_NS],
                )
            )
            for hour, count in rows:
                shard.execute(f"ALTER TABLE {self.layout.q(spans)} DROP PARTITION {int(hour)}")
                shard.execute(f"ALTER TABLE {self.layout.q(traces)} DROP PARTITION {int(hour)}")
                dropped += int(count)
            for table in _PRUNED_SIDE_TABLES:
                local = self.layout.local(table)
                days = shard.execute(
                    bind(
                        f"SELECT DISTINCT intDiv(time_ns, {DAY_NS}) AS day FROM {local} WHERE time_ns < ?",
                        [cutoff_ns - cutoff_ns % DAY_NS],
                    )
                )
                for (day,) in days:
                    shard.execute(f"ALTER TABLE {self.layout.q(local)} DROP PARTITION {int(day)}")
        self._prune_alert_history(cutoff_ns)
        return dropped

    def _prune_alert_history(self, cutoff_ns: int) -> None:
        """Alert transitions and acknowledgements older than the cutoff go, but those of episodes
        still pending or firing (what a restart restores), as on DuckDB: by an ``ALTER … DELETE``
        on each shard, only when there are such rows and no earlier one is still running (a
        mutation is asynchronous on 18.16, and rewrites the parts it touches)."""
        keep_transitions, keep_acks = open_episode_keys(self)
        for table, column, keep in (
            ("alert_transitions", "active_at_ns", keep_transitions),
            ("alert_acks", "fired_at_ns", keep_acks),
        ):
            local = self.layout.local(table)
            cond = "time_ns < ?"
            params: list[object] = [cutoff_ns]
            if keep:
                key = f"concat(ifNull(fingerprint, ''), '/', toString(ifNull({column}, -1)))"
                cond += f" AND {key} NOT IN ({', '.join('?' * len(keep))})"
                params += sorted(f"{fp or ''}/{-1 if at is None else int(at)}" for fp, at in keep)
            running = bind(
                "SELECT count() FROM system.mutations WHERE database = ? AND table = ? AND is_done = 0",
                [self.layout.database, local],
            )
            for shard in self._shards:
                if not shard.execute(bind(f"SELECT count() FROM {local} WHERE {cond}", params))[0][0]:
                    continue
                if shard.execute(running)[0][0]:
                    continue
                shard.execute(bind(f"ALTER TABLE {self.layout.q(local)} DELETE WHERE {cond}", params))

    def append(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        """Append rows to a side table (heartbeats, alert history); columns in
        ``store.schema.AUX_TABLES`` order."""
        cols = AUX_TYPES.get(table)
        if cols is None:
            raise ValueError(f"unknown side table {table!r}")
        if not rows:
            return
        data = [list(col) for col in zip(*rows, strict=True)]
        self._backend.insert(table, [c for c, _ in cols], data, [k for _, k in cols], self._insert_settings)

    # --- reading (any thread) --------------------------------------------------------------------
    def ping(self) -> bool:
        if self._closed:
            return False
        try:
            return self._backend.execute("SELECT 1") == [(1,)]
        except Exception:
            return False

    def trace_spans(self, trace_id: str) -> list[dict[str, Any]] | None:
        """Every stored row of one trace, ordered by start time; None when the trace is unknown."""
        ((found, first, last),) = self._backend.execute(bind(reads.bounds_sql(), [trace_id]))
        if not found:
            return None
        rows = self._backend.execute(
            bind(reads.spans_sql(), reads.spans_params(trace_id, int(first), int(last)))
        )
        return [reads.span_row(row) for row in rows]

    def search(self, f: TraceFilter) -> list[dict[str, Any]]:
        sql, params = reads.search_sql(f, self.layout)
        return [reads.summary_row(row) for row in self._backend.execute(bind(sql, params))]

    def count_spans(self) -> int:
        return int(self._backend.execute("SELECT count() FROM spans")[0][0])

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A read in ClickHouse's SQL with ``?`` placeholders, bound here (bind)."""
        return self._backend.execute(bind(sql, list(params)))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for backend in {id(b): b for b in (self._backend, *self._shards)}.values():
            backend.close()


def _by_partitions(table: pa.Table) -> list[pa.Table]:
    """The batch in pieces of at most MAX_PARTITIONS_PER_INSERT span partitions each (one piece
    almost always: a batch's spans end within an hour or two)."""
    hours = pc.divide(table.column("end_ns"), HOUR_NS)
    distinct = pc.unique(hours)
    if len(distinct) <= MAX_PARTITIONS_PER_INSERT:
        return [table]
    ordered = pc.sort_indices(distinct).to_pylist()
    values = distinct.to_pylist()
    groups = [
        [values[i] for i in ordered[k : k + MAX_PARTITIONS_PER_INSERT]]
        for k in range(0, len(ordered), MAX_PARTITIONS_PER_INSERT)
    ]
    return [table.filter(pc.is_in(hours, value_set=pa.array(group, hours.type))) for group in groups]
