"""How each trainer (speculators, SpecForge, modelopt, EAGLE, AngelSlim, Automodel) numbers the taps it trains on
(`taps.py`), and the known exceptions to what a checkpoint says of its training taps (`exceptions.py`)."""
