"""Benchmarks, datasets, splits, topics, qrels and reported results; their pages and curation."""
