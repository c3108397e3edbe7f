"""vLLM, release by release: tap rows by model class and runner (`taps.py`), speculative-config rules (`flags.py`
with `config.py`, `methods.py`, `draft.py`), arguments (`args.py`, `arguments.py`), checkpoint structure
(`structure.py`), metric names and endpoints (`metrics.py`), platform and runner from a server (`platform.py`);
`data/`: the release ledger, the registry and argument tables generated from the wheels, observed records."""
