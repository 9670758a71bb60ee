"""Snapshots: a board's state kept unchanged at a permanent address, for citation; the portable archive."""
