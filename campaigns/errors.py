"""The one error of this app's services: a message for a person, translated at the edge (form error, API error)."""


class TaskRefused(Exception):
    """A team or shared-task action refused, with what to do instead."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message
