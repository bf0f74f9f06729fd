"""Report: whole-vault answers built over retrieval (health, overview, evaluation, calibration).

They take an open index through `sidecar.retrieve.view.IndexView`, never the core itself.
May import retrieve and everything below it."""
