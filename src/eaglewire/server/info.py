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

Where the server runs (`platform`) and, for vLLM, which model runner it uses (`runner`) are read where the server
says them, each as a `Fact` naming what said it (`engines/vllm/platform.py`, `engines/sglang/platform.py`): vLLM's
/version local label ("0.32.0+cpu"), its /server_info (VLLM_SERVER_DEV_MODE=1 only: the config's device and
VLLM_USE_V2_MODEL_RUNNER), the engine's own log when `probe --launch` started it (`facts_of_log`); SGLang's
/server_info `device`. vLLM's CPU wheel from PyPI says neither on its endpoints ("0.32.0", no /server_info): the
probe then assumes, and says so (jobs/probe.py).
"""

from __future__ import annotations

import contextlib
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eaglewire.engines.metrics import ENDPOINTS
from eaglewire.engines.sglang import platform as sglang_platform
from eaglewire.engines.vllm import platform as vllm_platform
from eaglewire.errors import InputError
from eaglewire.server.counters import SpecCounters, models_in, read_counters
from eaglewire.server.http import Http
from eaglewire.server.prometheus import Sample, parse

VLLM, SGLANG = ENDPOINTS["vllm"], ENDPOINTS["sglang"]
SOURCES = ("server", "given", "launch", "assumed", "unknown")


@dataclass(frozen=True)
class Fact:
    """Where the server runs (platform: "cpu", "cuda", ...) or which model runner it uses (vLLM: "v1", "mrv2"), and
    where that came from: "server" (its endpoints or its own log), "given" (--platform, --runner), "launch" (the
    launch command: its environment, the interpreter it runs), "assumed" (nothing said it; `basis` names what would
    settle it), "unknown" (nothing said it and nothing was assumed)."""

    value: str | None
    source: str
    basis: str

    def to_dict(self) -> dict:
        return {"value": self.value, "source": self.source, "basis": self.basis}


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
    platform: Fact | None = None  # where the server says it runs (None: it does not say)
    runner: Fact | None = None  # vLLM: the model runner, where the server says it
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
            "platform": self.platform.to_dict() if self.platform else None,
            "runner": self.runner.to_dict() if self.runner else None,
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
    info.platform, info.runner = _vllm_facts(http, str(version))
    info.notes.append("vLLM does not publish its draft model: give --drafter (or probe --launch)")
    return info


def _vllm_facts(http: Http, version: str) -> tuple[Fact | None, Fact | None]:
    """Platform and runner where a vLLM server says them: its version's local label, its /server_info."""
    platform = runner = None
    label = vllm_platform.platform_of_version(version)
    if label is not None:
        platform = Fact(label, "server", f"/version {version!r} [{vllm_platform.VERSION_SOURCE}]")
    reply = http.get("/server_info")
    data = None
    if reply.status == 200:
        with contextlib.suppress(InputError):
            data = http.json(reply, "/server_info")
    if isinstance(data, dict) and "vllm_config" in data:
        device = vllm_platform.platform_of_server_info(data)
        if device is not None and platform is None:
            platform = Fact(device, "server", f"/server_info device_config={device} "
                            f"[{vllm_platform.SERVER_INFO_SOURCE}]")  # fmt: skip
        env = data.get("vllm_env") if isinstance(data.get("vllm_env"), dict) else {}
        ran = vllm_platform.runner_of_env(env)
        if ran is not None:
            runner = Fact(ran, "server", f"/server_info vllm_env {vllm_platform.RUNNER_ENV}="
                          f"{env[vllm_platform.RUNNER_ENV]} [{vllm_platform.SERVER_INFO_SOURCE}]")  # fmt: skip
    return platform, runner


def facts_of_log(text: str, engine: str) -> tuple[Fact | None, Fact | None]:
    """Platform and runner where the engine's own log says them (`probe --launch` has the log while the engine
    runs). vLLM only: SGLang's /server_info already says its device."""
    if engine != "vllm":
        return None, None
    platform, runner = vllm_platform.read_log(text)
    src = vllm_platform.LOG_SOURCE
    return (
        Fact(platform[0], "server", f"the engine's log: {platform[1]} [{src}]") if platform else None,
        Fact(runner[0], "server", f"the engine's log: {runner[1]} [{src}]") if runner else None,
    )


_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of a logger writing to a terminal (SGLang's warnings)
_SAID = ("adjust", "overrid", "overwrit", "reset", "forc", "disabl", "not support", "not implemented", "ignor",
         "capped", "capping", "fall back", "falling back", "instead")  # fmt: skip


def engine_said(log: Path | str | None, limit: int = 20) -> list[str]:
    """The engine's own words about the speculative settings it changed (SGLang: "speculative_num_draft_tokens is
    adjusted to speculative_num_steps + 1"): the log lines that name speculation and a change, each once, without
    the logger's timestamp. The log goes when the engine stops; these lines stay in the report."""
    try:
        text = Path(log).read_text(errors="replace") if log else ""
    except OSError:
        return []
    out: list[str] = []
    for line in _ANSI.sub("", text).splitlines():
        low = line.lower()
        if len(line) > 500 or "_args=" in low:
            continue  # a dump of every setting (SGLang's server_args=..., vLLM's non-default args), not a change
        if "specul" in low and any(w in low for w in _SAID):
            line = re.sub(r"^\[?\d{4}-\d\d-\d\d[ T][\d:.,]+\]?\s*", "", line.strip())[:300]
            if line not in out:
                out.append(line)
    return out[:limit]


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
        info.notes.append(
            "no /metrics (SGLang without --enable-metrics): each request's own speculative details only"
        )
    else:
        info.metrics_models = models_in(samples, "sglang")
        info.counters = read_counters(
            samples,
            "sglang",
            card["id"] if card["id"] in info.metrics_models else None,
            f"{http.base}/metrics",
        )
    device = _find(data, sglang_platform.DEVICE_KEY)
    if isinstance(device, str) and device:
        info.platform = Fact(device.split(":")[0], "server", f"/server_info device={device!r} "
                             f"[{sglang_platform.SOURCE}]")  # fmt: skip
    if settings.get("speculative_algorithm") is None:
        info.counters = None
    elif info.counters is None:
        info.counters = SpecCounters("sglang", 0.0, 0.0, 0.0)
    return info
