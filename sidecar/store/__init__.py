"""Store: the index database. Every SQL statement that writes index rows lives here.

Connecting (driver, sqlite-vec, schema), vector storage, the rows of notes/chunks/links/tags,
the history database, and the indexer: the one writer that runs ingest into the store.
May import ingest and the kernel."""
