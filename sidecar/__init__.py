"""Vault Sidecar: local-first hybrid retrieval for Obsidian vaults."""

__version__ = "0.1.0"
