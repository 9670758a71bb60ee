"""Participants' software run on the platform: the podman sandbox (``runner``), its runs and their queue."""
