"""Golden test: the installed `eaglewire` CLI gives the answers recorded in tests/golden/answers.json (check, lint,
test, the published pairings, a slice of the no-traceback property). It proves that a restructure of the package
changes no behaviour; tests/golden/answers.py says what is covered and how to regenerate (only for an intended
change, said in the commit). About 2 minutes on 2 idle cores, most of it `eaglewire test` and the check slice."""

from __future__ import annotations

import json

from golden.answers import ANSWERS, answers


def first_difference(want, got, where: str = "") -> str:
    """Where two JSON values first differ, and the two values there (truncated)."""
    if isinstance(want, dict) and isinstance(got, dict):
        for k in sorted(want.keys() | got.keys()):
            if want.get(k, "<absent>") != got.get(k, "<absent>"):
                return first_difference(want.get(k, "<absent>"), got.get(k, "<absent>"), f"{where}.{k}")
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            if w != g:
                return first_difference(w, g, f"{where}[{i}]")
    return f"{where or '.'}: recorded {json.dumps(want)[:300]}, now {json.dumps(got)[:300]}"


def test_cli_answers_are_unchanged():
    want = json.loads(ANSWERS.read_text())
    got = json.loads(json.dumps(answers()))  # tuples as lists, as recorded
    differ = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
    detail = first_difference(want.get(differ[0]), got.get(differ[0]), differ[0]) if differ else ""
    assert not differ, f"{len(differ)} of {len(want)} answers differ, the first 20: {differ[:20]}; {detail}"
