"""Ingest: the vault on disk to redacted, parsed, chunked, embedded notes.

Walk and ignore rules (vault), safe reads, redaction, parsing, chunking, unspaced scripts, link
resolution, boilerplate keys and the embedding model. Pure stages except `vault` (reads the vault)
and `embed` (reads the model files). May import only the kernel (`sidecar.config`, `errors`, `notes`,
`private`, `protocol_types`)."""
