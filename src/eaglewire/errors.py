"""User-facing errors: one line that names the file, key or flag and says what to do.

The CLI turns an `InputError` into that line and exit code 2; a found problem (a mismatch, bad flags) is a
result, not an exception, and gives exit code 1; a verdict that cannot be decided (`unverified`) gives 3.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_BAD_INPUT = 2
EXIT_UNVERIFIED = 3  # the evidence does not decide the verdict: the report names what settles it
EXIT_CODES = {"ok": EXIT_OK, "problem": EXIT_PROBLEM, "unverified": EXIT_UNVERIFIED}


class InputError(Exception):
    """Bad input: a missing or malformed file, key, tensor or flag. The message is the whole story, one line."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))
