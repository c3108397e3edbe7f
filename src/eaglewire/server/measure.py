"""The live measurement: the engine's own speculative counters over the probe's window, per request and in all.

Requests go one at a time and the counters are read between them, so every request gets its own counter delta
(the deltas add up to the window exactly: each reading ends one request's window and starts the next). vLLM's
counters are engine-wide: a window in which a request the probe did not send finished is marked (its finished-
request and generated-token counters moved by more than the probe's own) and said in the notes; such traffic
cannot be taken out of vLLM's counters. SGLang answers each request with its own details, so other traffic never
enters; its Prometheus counters (generated tokens, verify calls) are read as well where it publishes them.

Confidence interval: 95% percentile bootstrap over requests (2000 resamples, fixed seed). The request is the
unit because positions within one request are correlated; the accept length is a ratio of sums over requests
(1 + sum accepted / sum drafts), recomputed on each resample, and so is per-position acceptance.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from eaglewire.errors import InputError
from eaglewire.server.counters import SpecCounters, read_counters
from eaglewire.server.http import Http
from eaglewire.server.info import ServerInfo, read_metrics
from eaglewire.server.workload import SGLANG_DETAILS_FROM, Prompt, native, send, sglang_without_details

CI_METHOD = "95% percentile bootstrap over requests (2000 resamples, seed 0)"
BOOTSTRAP = 2000


@dataclass
class RequestWindow:
    index: int
    source: str
    prompt_tokens: int | None
    completion_tokens: int
    seconds: float
    counters: SpecCounters  # this request's speculative counters
    other_traffic: bool = False

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "source": self.source,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3),
            "other_traffic": self.other_traffic,
        } | {k: v for k, v in self.counters.to_dict().items() if k not in ("engine", "labels")}


@dataclass
class Measurement:
    engine: str
    k: int | None  # draft tokens per verify
    window: SpecCounters  # the engine's counters over the probe's window (after - before)
    requests: list[RequestWindow] = field(default_factory=list)
    accept_length_ci: tuple[float, float] | None = None
    per_position_ci: list[tuple[float, float]] | None = None
    ci_method: str = CI_METHOD
    scope: str = (
        "workload"  # "workload" (the probe's requests) | "lifetime" (everything since the server started)
    )
    other_traffic: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def accept_length(self) -> float | None:
        return self.window.accept_length

    @property
    def per_position(self) -> list[float] | None:
        return self.window.per_position

    @property
    def half_width(self) -> float:
        """Half the width of the accept length's interval (0 without one)."""
        if self.accept_length_ci is None:
            return 0.0
        lo, hi = self.accept_length_ci
        return (hi - lo) / 2

    def to_dict(self) -> dict:
        return {
            "engine": self.engine,
            "scope": self.scope,
            "draft_tokens_per_verify": self.k,
            "accept_length": self.accept_length,
            "accept_length_ci95": list(self.accept_length_ci) if self.accept_length_ci else None,
            "per_position_acceptance": self.per_position,
            "per_position_ci95": [list(c) for c in self.per_position_ci] if self.per_position_ci else None,
            "ci_method": self.ci_method if self.accept_length_ci else None,
            "counters": self.window.to_dict(),
            "other_traffic": self.other_traffic,
            "requests": [r.to_dict() for r in self.requests],
            "seconds": round(self.seconds, 2),
            "notes": self.notes,
        }


def snapshot(http: Http, info: ServerInfo) -> SpecCounters:
    """The engine's speculative counters now (zeros for SGLang before its first verify is counted)."""
    samples = read_metrics(http)
    found = read_counters(samples, info.engine, info.model, f"{http.base}/metrics") if samples else None
    if found is None:
        if info.engine == "sglang":
            return SpecCounters("sglang", 0.0, 0.0, 0.0)
        raise InputError(f"{http.base}/metrics: the speculative counters disappeared (server restarted?)")
    return found


def _settled(http: Http, info: ServerInfo, before: SpecCounters, done: int, wait: float) -> SpecCounters:
    """Counters once the finished-request counter has moved by `done` (the engine records a request's last step
    just after answering it), or after `wait` seconds."""
    end = time.monotonic() + wait
    while True:
        now = snapshot(http, info)
        if now.requests - before.requests >= done or time.monotonic() > end:
            return now
        time.sleep(0.05)


def _pad(per_pos: list[float] | None, k: int | None) -> list[float] | None:
    if per_pos is None or k is None:
        return per_pos
    return (per_pos + [0.0] * k)[:k]


def bootstrap(
    drafts: np.ndarray, accepted: np.ndarray, per_pos: np.ndarray | None, seed: int = 0
) -> tuple[tuple[float, float] | None, list[tuple[float, float]] | None]:
    """Percentile intervals of 1 + sum(accepted)/sum(drafts) and of sum(per_pos[:, i])/sum(drafts), resampling
    requests. None with fewer than two requests."""
    n = drafts.size
    if n < 2:
        return None, None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(BOOTSTRAP, n))
    d = drafts[idx].sum(1)
    ok = d > 0
    tau = 1 + accepted[idx].sum(1)[ok] / d[ok]
    lo, hi = np.percentile(tau, [2.5, 97.5])
    pos_ci = None
    if per_pos is not None and per_pos.size:
        rates = per_pos[idx].sum(1)[ok] / d[ok][:, None]
        q = np.percentile(rates, [2.5, 97.5], axis=0)
        pos_ci = [(float(a), float(b)) for a, b in zip(q[0], q[1], strict=True)]
    return (float(lo), float(hi)), pos_ci


def measure(
    http: Http,
    info: ServerInfo,
    prompts: list[Prompt],
    max_tokens: int,
    time_limit: float = 300.0,
    progress=None,
) -> Measurement:
    """Send `prompts` one at a time (stopping when `time_limit` seconds are spent) and read the counters around
    each; with no prompts, read the counters once: everything since the server started (scope "lifetime")."""
    start = time.monotonic()
    if not prompts:
        now = snapshot(http, info)
        m = Measurement(info.engine, info.k, now, scope="lifetime")
        m.notes.append(
            "no workload sent: the counters since the server started, every client's traffic included"
        )
        return m
    first = before = snapshot(http, info)
    windows: list[RequestWindow] = []
    for i, prompt in enumerate(prompts):
        left = time_limit - (time.monotonic() - start)
        if left <= 0:
            break
        if progress:
            progress(f"request {i + 1}/{len(prompts)}")
        generate = native(info.engine, info.version, prompt)
        done = send(http, info.engine, info.model, prompt, max_tokens, timeout=left, generate=generate)
        # SGLang's own per-request details need no counter to settle; vLLM records the last step just after
        wait = 0.0 if done.spec is not None else min(5.0, max(0.5, left))
        after = _settled(http, info, before, 1, wait=wait)
        delta = after - before
        if info.engine == "sglang" and done.spec is not None:
            own = done.spec
            other = False
        else:
            own = delta
            other = delta.requests > 1 or delta.generated > done.completion_tokens
        own.per_pos = _pad(own.per_pos, info.k)
        windows.append(
            RequestWindow(
                i, prompt.source, done.prompt_tokens, done.completion_tokens, done.seconds, own, other
            )
        )
        before = after
    window = before - first
    m = Measurement(info.engine, info.k, window, windows, seconds=time.monotonic() - start)
    if len(windows) < len(prompts):
        m.notes.append(
            f"time limit {time_limit:.0f} s reached: {len(windows)} of {len(prompts)} requests sent"
        )
    if info.engine == "sglang" and all(w.counters.labels.get("source") for w in windows):
        # SGLang: the requests' own details are the measurement; its Prometheus counters are the window's.
        own = _sum([w.counters for w in windows], info.k)
        m.window = own
        source = windows[0].counters.labels["source"]
        m.notes.append(f"SGLang: per-request speculative details, {source} (other traffic never enters them)")
        if own.accepted is None:
            m.notes.append(
                f"SGLang {info.version} counts no accepted drafts per request: accept length is SGLang's own, "
                "completion tokens / verify steps (the first token, from prefill, and any accepted past max_tokens "
                "included)"
            )
    m.other_traffic = any(w.other_traffic for w in windows)
    if m.other_traffic:
        n = sum(w.other_traffic for w in windows)
        m.notes.append(
            f"other traffic: in {n} of {len(windows)} request windows the server finished requests the probe did "
            "not send; vLLM's counters are engine-wide and include their drafts"
        )
    if not m.window.drafts and info.engine == "sglang" and _sglang_uncounted(info, prompts):
        raise InputError(
            f"{http.base}: SGLang {info.version} counts verify steps in Prometheus only from 0.5.13 (with "
            f"--enable-metrics) and returns no speculative details on its OpenAI API before {SGLANG_DETAILS_FROM}; "
            "chat prompts cannot go "
            "to its native /generate (which counts them): give token-id or text prompts (--target with --data, or "
            "a text file)"
        )
    if not m.window.drafts:
        raise InputError(
            f"{http.base}: the probe's requests made no speculative verify step (counters unchanged): "
            "is speculative decoding active for this model?"
        )
    drafts = np.array([w.counters.drafts for w in windows], dtype=float)
    if windows and all(w.counters.accepted is not None for w in windows):
        accepted = np.array([w.counters.accepted for w in windows], dtype=float)
    else:  # SGLang counters only: accept length = generated / verify calls
        accepted = np.array([w.counters.generated - w.counters.drafts for w in windows], dtype=float)
    per_pos = None
    if windows and all(w.counters.per_pos is not None for w in windows):
        per_pos = np.array([w.counters.per_pos for w in windows], dtype=float)
    m.accept_length_ci, m.per_position_ci = bootstrap(drafts, accepted, per_pos)
    return m


def _sglang_uncounted(info: ServerInfo, prompts: list[Prompt]) -> bool:
    """An SGLang release whose OpenAI API gives no speculative details, sent prompts /generate cannot take."""
    return sglang_without_details(info.version) and any(p.messages is not None for p in prompts)


def _sum(parts: list[SpecCounters], k: int | None) -> SpecCounters:
    total = SpecCounters(parts[0].engine, 0.0, 0.0, 0.0, 0.0, 0.0, [0.0] * (k or 0) if k else None)
    for p in parts:
        total.drafts += p.drafts
        total.generated += p.generated
        total.requests += p.requests
        total.draft_tokens = (total.draft_tokens or 0.0) + (p.draft_tokens or 0.0)
        total.accepted = (total.accepted or 0.0) + (p.accepted or 0.0)
        if total.per_pos is not None and p.per_pos is not None:
            total.per_pos = [a + b for a, b in zip(total.per_pos, _pad(p.per_pos, k) or [], strict=True)]
    total.labels = dict(parts[0].labels) or {"source": "sglext.spec_tokens_details"}
    if any(p.accepted is None for p in parts):
        total.accepted = None  # SGLang's own accept length: completion tokens / verify steps
    return total
