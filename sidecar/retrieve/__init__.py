"""Retrieve: answering from the index (snapshot, BM25 and vector legs, search, related notes,
note reads, agent context, paging).

May import rank, store, ingest and the kernel."""
