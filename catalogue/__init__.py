"""Benchmarks, datasets, splits, topics, qrels and reported results; importers and cards (admin: curation/)."""
