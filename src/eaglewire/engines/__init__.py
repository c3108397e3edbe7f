"""Everything each engine does, release by release: one folder per engine (`sglang/`, `vllm/`, `trtllm/`), each with
its rows (tap rules, launch-flag rules and sizes, draft-model settings, checkpoint structure, metric names) and its
generated data (`data/`: the release ledger, registries, argument tables, observed records).

The modules here are the table over all engines: `table.py` (every tap row, the frameworks, the default release of
each engine from its ledger, and the lookup `rows_for`), `runners.py` (which row a launch uses), `models.py` (target
family -> engine model file), `metrics.py` (each engine's counter names and server endpoints), `registries.py`,
`observed.py`, `parse.py` (launch commands), `versions.py`.
"""
