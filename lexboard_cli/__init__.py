"""Lexboard's command-line client (``python -m lexboard_cli``): standard library only, no project import.

``client.py`` is the whole client in one file, so a researcher can copy it next to their experiments.
"""
