"""Serve: what both ports and the serving process share: the localhost rules, connection limits,
the read gate, tokens, ports, request checks, events, the watcher and client configuration.

May import the core and everything below it; never an adapter."""
