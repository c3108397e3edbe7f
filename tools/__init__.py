"""Generators that read the engines' wheels or the package index and write `src/eaglewire/engines/<engine>/data/`
(registry_scan, arg_scan, ledger). Never imported at runtime (tests/test_architecture.py checks it)."""
