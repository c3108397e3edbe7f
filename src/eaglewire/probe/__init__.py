"""`eaglewire probe`: a live server's own speculative counters against the engine-walk prediction, and the cause.

One concept per module: `http.py` (the client), `prometheus.py` (metrics text), `counters.py` (each engine's
speculative counters, a row per engine), `server.py` (what a server says about itself), `workload.py` (prompts
and requests), `measure.py` (counter deltas per request, the confidence interval), `predict.py` (the prediction
under served and trained taps), `diagnose.py` (the cause), `launch.py` (start and always stop an engine from a
serve command; reusable as a context manager), `job.py` (the command).
"""

from eaglewire.probe.diagnose import DIAGNOSES, Diagnosis, diagnose
from eaglewire.probe.job import ProbeOptions, ProbeReport, probe, probe_launch
from eaglewire.probe.launch import Engine, EngineStartError

__all__ = [
    "DIAGNOSES", "Diagnosis", "Engine", "EngineStartError", "ProbeOptions", "ProbeReport", "diagnose", "probe",
    "probe_launch",
]  # fmt: skip
