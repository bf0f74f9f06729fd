"""Rank: pure functions over candidates (RRF fusion, leg weights, confidence, bands, query evidence).

No I/O. May import only the kernel."""
