"""Uploads, submission records and their life cycle, scores, participants' pages, the HTTP API."""
