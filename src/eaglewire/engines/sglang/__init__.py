"""SGLang, release by release: tap rows (`taps.py`), launch-flag rules (`flags.py` with `sizes.py`, `families.py`,
`backends.py`, `draft.py`), arguments (`args.py`, `arguments.py`), checkpoint structure (`structure.py`), metric
names and endpoints (`metrics.py`), what a server says of its platform (`platform.py`); `data/`: the release ledger,
the registry and argument tables generated from the wheels, observed records."""
