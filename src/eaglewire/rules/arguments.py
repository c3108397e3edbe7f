"""What one engine release does with one speculative argument: the `ArgumentRow` (a `Row`) and its verdicts.

Verdicts (a row may carry several: what happens depends on the algorithm or the other flags, `note` says when):
- honoured: the engine uses the value given (an unset argument gets a default that does not override the user);
- adjusted: the engine changes the value the user gave (or fills one in that the user would not expect);
- ignored: accepted and never used, in the condition the note names;
- refused: startup fails (argparse, a ValueError of the argument code, or loading the draft);
- internal: not a launch argument (set by the engine itself, or no command-line flag).
An adjusted or ignored argument names the lint rows that report it, or says why none can (`no_rule`).
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglewire.rules.row import Row

HONOURED, ADJUSTED, IGNORED, REFUSED, INTERNAL = "honoured", "adjusted", "ignored", "refused", "internal"
VERDICTS = (HONOURED, ADJUSTED, IGNORED, REFUSED, INTERNAL)
SILENT = (ADJUSTED, IGNORED)


@dataclass(frozen=True)
class ArgumentRow(Row):
    engine: str
    name: str  # as the scan names it: a ServerArgs field, a SpeculativeConfig key, "EngineArgs.<field>", "draft:<setting>"
    versions: str  # PEP 440 specifier set over the releases read
    verdicts: tuple[str, ...]
    rules: tuple[str, ...]  # lint rows (FlagRule.name) that report it
    source: str  # where the behaviour is written, file:line at a release
    note: str = ""
    no_rule: str = ""  # an adjusted/ignored argument without a lint row: why none can report it
