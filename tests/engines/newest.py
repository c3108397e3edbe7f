"""Print the newest release of a package on the index (`pip index versions`), or the pinned one if it cannot
be asked. Used by `make test-engines` to run the oracle against the newest SGLang / vLLM too."""

from __future__ import annotations

import re
import subprocess
import sys


def newest(name: str, fallback: str) -> str:
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", name],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return fallback
    found = re.search(rf"^{re.escape(name)} \(([^)]+)\)", out, re.MULTILINE)
    return found.group(1) if found else fallback


if __name__ == "__main__":
    sys.stdout.write(newest(sys.argv[1], sys.argv[2]) + "\n")
