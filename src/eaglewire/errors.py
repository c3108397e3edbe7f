"""User-facing errors: one line that names the file, key or flag and says what to do.

The CLI turns an `InputError` into that line and exit code 2; a found problem (a mismatch, bad flags) is a
result, not an exception, and gives exit code 1.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_BAD_INPUT = 2
EXIT_UNVERIFIED = 3  # nothing wrong found, but not every fact behind an `ok` is known


class InputError(Exception):
    """Bad input: a missing or malformed file, key, tensor or flag. The message is the whole story, one line."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))
