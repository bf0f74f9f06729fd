"""Tasks behind build.py. Standard library only."""
