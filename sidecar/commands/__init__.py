"""Commands: the `sidecar` program (argument parsing and printing), the `serve` process that runs
both adapters, `init`, `doctor`.

The top layer: nothing imports it."""
