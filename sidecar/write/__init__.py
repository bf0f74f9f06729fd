"""Write: agent edits to the vault (off unless the user turns them on), confined file operations.

May import report and everything below it."""
