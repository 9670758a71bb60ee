"""The researcher's API under /api/v1/ (Django REST framework): datasets, leaderboards, submissions, analyses."""
