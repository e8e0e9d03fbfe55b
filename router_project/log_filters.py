"""Logging filters the settings name (LOGGING["filters"])."""

import logging


class WithoutTraceback(logging.Filter):
    """Keep the record's message, drop its traceback: for errors that are the client's.

    Django logs a Host not in ALLOWED_HOSTS with the exception attached, which
    prints 13 lines of its own call stack for what its message already says.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True
