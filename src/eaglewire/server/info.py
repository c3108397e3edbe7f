"""What a running server says about itself: which engine and version, the served model, the speculative settings
and the draft model where it tells them, and its speculative counters.

Endpoints read (each engine's `EndpointRow` in `eaglewire.engines.metrics`: a fact about another framework, with
its source):
- vLLM: `GET /v1/models` (served name, `root` = the model path, max_model_len), `GET /version`, `GET /metrics`.
  It does not publish the draft model or its speculative config (only with VLLM_SERVER_DEV_MODE, `/server_info`);
  the number of per-position counters is its num_speculative_tokens.
- SGLang: `GET /server_info` (`/get_server_info` before 0.5.x renamed it): every resolved server argument (the
  speculative settings and the draft model path), `launch_command` (what was asked for), `version`;
  `GET /model_info` (`/get_model_info`), `GET /metrics` with --enable-metrics.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from eaglewire.engines.metrics import ENDPOINTS
from eaglewire.errors import InputError
from eaglewire.server.counters import SpecCounters, models_in, read_counters
from eaglewire.server.http import Http
from eaglewire.server.prometheus import Sample, parse

VLLM, SGLANG = ENDPOINTS["vllm"], ENDPOINTS["sglang"]


@dataclass
class ServerInfo:
    url: str
    engine: str  # "vllm" | "sglang"
    version: str | None
    model: str  # the served model name (requests name it)
    model_path: str | None  # where the server loaded it from, where it says
    max_model_len: int | None = None
    draft_model: str | None = None  # where the server says (SGLang)
    settings: dict[str, Any] = field(default_factory=dict)  # speculative settings as the server reports them
    launch_command: list[str] | None = None  # what the server was asked to run (SGLang's launch_command)
    counters: SpecCounters | None = None  # at the time of reading
    metrics_models: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def speculative(self) -> bool:
        return self.counters is not None

    @property
    def k(self) -> int | None:
        """Draft tokens per verify (chain): vLLM's per-position counters; SGLang num_draft_tokens - 1."""
        if self.counters is not None and self.counters.k:
            return self.counters.k
        ndt = self.settings.get("speculative_num_draft_tokens")
        return ndt - 1 if isinstance(ndt, int) else None

    def to_dict(self) -> dict:
        return {
            "url": self.url,
            "engine": self.engine,
            "version": self.version,
            "model": self.model,
            "model_path": self.model_path,
            "max_model_len": self.max_model_len,
            "draft_model": self.draft_model,
            "speculative_settings": self.settings,
            "draft_tokens_per_verify": self.k,
            "launch_command": self.launch_command,
            "source": ENDPOINTS[self.engine].source,
            "notes": self.notes,
        }


def _find(data: Any, key: str) -> Any:
    """`key` anywhere in nested dicts (SGLang's resolved_dict expands nested records)."""
    if isinstance(data, dict):
        if key in data:
            return data[key]
        for v in data.values():
            found = _find(v, key)
            if found is not None:
                return found
    return None


def _has(data: Any, key: str) -> bool:
    return isinstance(data, dict) and (key in data or any(_has(v, key) for v in data.values()))


def read_metrics(http: Http) -> list[Sample] | None:
    """The server's /metrics as samples; None when it has no metrics endpoint (404)."""
    reply = http.get("/metrics")
    if reply.status == 404:
        return None
    if reply.status != 200:
        raise InputError(f"{http.base}/metrics: HTTP {reply.status}")
    return parse(reply.body, f"{http.base}/metrics")


def _models(http: Http) -> list[dict]:
    reply = http.get("/v1/models")
    if reply.status != 200:
        raise InputError(
            f"{http.base}: no vLLM or SGLang server answers here (GET /v1/models: HTTP {reply.status}); "
            "give the URL of the engine's OpenAI-compatible server"
        )
    data = http.json(reply, "/v1/models")
    cards = data.get("data") if isinstance(data, dict) else None
    if not isinstance(cards, list) or not cards or not all(isinstance(c, dict) and "id" in c for c in cards):
        raise InputError(f"{http.base}/v1/models: not an OpenAI model list; is this a vLLM or SGLang server?")
    return cards


def _sglang_info(http: Http) -> dict | None:
    for path in SGLANG.info:
        reply = http.get(path)
        if reply.status == 200:
            data = http.json(reply, path)
            if isinstance(data, dict) and (_has(data, "speculative_algorithm") or _has(data, "model_path")):
                return data
    return None


def read_server(url: str, model: str | None = None, timeout: float = 10.0) -> ServerInfo:
    """Ask the server at `url` what it is. Raises `InputError` (one line) when nothing there is a vLLM or SGLang
    server, or its metrics are not Prometheus text."""
    http = Http(url, timeout)
    cards = _models(http)
    ids = [c["id"] for c in cards]
    if model is not None and model not in ids:
        raise InputError(f"{http.base}: serves {', '.join(ids)}, not {model!r}")
    card = next(c for c in cards if c["id"] == (model or ids[0]))
    sg = _sglang_info(http)
    if sg is not None:
        return _sglang(http, card, sg)
    version_path = VLLM.info[0]
    reply = http.get(version_path)
    version = None
    if reply.status == 200:
        data = http.json(reply, version_path)
        version = data.get("version") if isinstance(data, dict) else None
    samples = read_metrics(http)
    if samples is None or version is None or not any(s.name.startswith("vllm:") for s in samples):
        raise InputError(
            f"{http.base}: answers /v1/models but is neither vLLM (/version and vllm: metrics) nor SGLang "
            "(/server_info); eaglewire probe reads those two engines"
        )
    names = models_in(samples, "vllm")
    counters = read_counters(
        samples, "vllm", card["id"] if card["id"] in names else None, f"{http.base}/metrics"
    )
    info = ServerInfo(
        http.base, "vllm", str(version), card["id"], card.get("root"), card.get("max_model_len"),
        counters=counters, metrics_models=names,
    )  # fmt: skip
    if counters is not None:
        info.settings = {"num_speculative_tokens": counters.k}
    info.notes.append("vLLM does not publish its draft model: give --drafter (or probe --launch)")
    return info


def _sglang(http: Http, card: dict, data: dict) -> ServerInfo:
    model_path = _find(data, "model_path")
    for path in SGLANG.model:
        reply = http.get(path)
        if reply.status == 200:
            mi = http.json(reply, path)
            if isinstance(mi, dict) and mi.get("model_path"):
                model_path = mi["model_path"]
            break
    settings = {k: _find(data, k) for k in SGLANG.settings}
    launch = data.get("launch_command")
    argv = None
    if isinstance(launch, str) and launch.strip():
        try:
            argv = ["python", "-m", "sglang.launch_server", *shlex.split(launch)]
        except ValueError:
            argv = ["python", "-m", "sglang.launch_server", *launch.split()]
    info = ServerInfo(
        http.base, "sglang", str(data.get("version")) if data.get("version") else None, card["id"], model_path,
        card.get("max_model_len"), settings.get("speculative_draft_model_path"), settings, argv,
    )  # fmt: skip
    samples = read_metrics(http)
    if samples is None:
        info.notes.append("no /metrics (SGLang without --enable-metrics): per-request details only")
    else:
        info.metrics_models = models_in(samples, "sglang")
        info.counters = read_counters(
            samples,
            "sglang",
            card["id"] if card["id"] in info.metrics_models else None,
            f"{http.base}/metrics",
        )
    if settings.get("speculative_algorithm") is None:
        info.counters = None
    elif info.counters is None:
        info.counters = SpecCounters("sglang", 0.0, 0.0, 0.0)
    return info
