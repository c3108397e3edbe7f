"""Talking to a live serving engine: the HTTP client (`http.py`), Prometheus text (`prometheus.py`), each engine's
speculative counters (`counters.py`), what a server says about itself (`info.py`), the probe's prompts and requests
(`workload.py`), counter deltas per request (`measure.py`), and starting and always stopping an engine from its serve
command (`launch.py`). A low layer: the jobs use it (`jobs/probe.py`); it imports no job."""
