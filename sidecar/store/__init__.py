"""Store: the index database. Every SQL statement lives here; no module outside store/ issues one
(tests/test_store_only_sql.py).

Connecting (driver, sqlite-vec, schema), vector storage, the rows of notes/chunks/links/tags (the
writes), the reads the upper layers ask of the index as functions over a reader's connection (reads:
notes, links, counts, the read transaction; health_reads; search_reads; snapshot_reads), the history database, and
the indexer: the one writer that runs ingest into the store. May import ingest and the kernel."""
