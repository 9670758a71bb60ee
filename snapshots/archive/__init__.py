"""The portable archive of a benchmark: ``manage.py export_benchmark`` and ``import_benchmark``.

One tar file holds a benchmark's datasets with everything their boards rest on (splits, topics, corpus ids,
qrels versions, entries with their run files, results and per-query vectors, shared tasks, judgment pools,
the release ledger, snapshots), a manifest with the sha256 of every member, and the hidden splits' labels
either encrypted (Fernet, to a key the operator keeps) or left out. docs/archive.md is the format's reference.

- :mod:`.spec`: which models travel, in which order, filtered how; which are left out and why; which fields
  are hidden material.
- :mod:`.keys`: the operator's key, its fingerprint, encryption.
- :mod:`.writer`: the export. :mod:`.reader`: checks and the import, in one transaction.
- :mod:`.state`: a benchmark's boards, snapshots and scores with host-independent identities, for comparing
  two hosts.
"""
