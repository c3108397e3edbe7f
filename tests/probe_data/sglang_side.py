"""Write the SGLang fixtures of tests/test_probe.py with SGLang 0.5.23's own code, where that code runs on a CPU.

    .venv-engines/sglang-0.5.23/bin/python tests/probe_data/sglang_side.py TARGET_DIR DRAFTER_DIR OUT_DIR

(the venv of `make test-engines`, plus what SGLang requires and its argument-code list does not install:
prometheus-client==0.26.0 fastapi==0.165.0 uvicorn==0.54.0 uvloop==0.23.0 pyzmq==27.3.0, for the metrics collector
and the tokenizer manager). Runs inside SGLang's Python; imports SGLang, the standard library and eaglewire's engine-code
probe script (which imports only the engine), never eaglewire itself.

What is SGLang's own code and what is not:
- server_info-*.json: `prepare_server_args` on the Kimi-K2.5-style launch (and a K = 3 chain) below (GPU queries answered as an H200, as
  `make test-engines` does), then exactly what `GET /server_info` returns (srt/entrypoints/http_server.py:864-891):
  `msgspec_to_builtins(redact_watermark_secrets({**build_server_info(server_args, scheduler_info), startup_time,
  internal_states, version, frontend}))`. `scheduler_info` and `internal_states` come from a running scheduler
  (a GPU): the values here are stand-ins, marked by the key `_fixture_stand_ins`.
- metrics.txt: SGLang's `TokenizerMetricsCollector` (srt/observability/metrics_collector.py) observing finished
  requests as the tokenizer manager does, then prometheus_client's exposition of that registry (what
  `GET /metrics` serves).
- completion.json: the per-request details: `TokenizerManager._calculate_spec_decoding_metrics` (the meta_info the
  scheduler's counts give, srt/managers/tokenizer_manager.py:3138-3190) under the published K = 3 launch, the
  scheduler's batch output (`REQUESTS`) as a stand-in, then `spec_tokens_details_from_meta_info` and the `CompletionResponse` model of
  srt/entrypoints/openai/protocol.py, serialized as the server does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2] / "src" / "eaglewire" / "enginecode"))

H200 = {"name": "NVIDIA H200", "capability": [9, 0], "memory_mib": 143771, "count": 1, "sms": 132}
MODEL_NAME = "zoo-target"
# (completion tokens, verify steps, accepted drafts, histogram of accepted drafts per verify) per request, for the
# K = 3 launch (completion = 1 prefill token + verify steps + accepted drafts)
REQUESTS = [(87, 30, 56, [5, 6, 7, 12]), (88, 35, 52, [8, 10, 9, 8]), (102, 32, 69, [3, 5, 8, 16])]
KIMI = [
    "--speculative-num-steps",
    "1",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "16",
]
CHAIN3 = [
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "4",
]


def launch(target: str, drafter: str, spec: list[str]):
    """SGLang's own resolution of a launch (GPU queries answered as an H200), published as the server does."""
    import probe  # eaglewire's engine-code probe (imports only the engine)

    probe._sglang_setup(H200)
    from sglang.srt.runtime_context import get_context
    from sglang.srt.server_args import prepare_server_args

    argv = [
        "--model-path", target, "--served-model-name", MODEL_NAME, "--speculative-algorithm", "EAGLE3",
        "--speculative-draft-model-path", drafter, *spec, "--host", "127.0.0.1", "--port", "30000",
        "--enable-metrics",
    ]  # fmt: skip
    args = prepare_server_args(argv)
    args.resolve_once()
    get_context().set_server_args(args)
    return args


def server_info(args) -> dict:
    from sglang.srt.sampling.watermarking.core import redact_watermark_secrets
    from sglang.srt.utils.common import build_server_info
    from sglang.srt.utils.msgspec_utils import msgspec_to_builtins
    from sglang.version import __version__

    scheduler_info = {"status": "ready", "max_total_num_tokens": 116480, "max_req_input_len": 1018}
    internal = [{"avg_spec_accept_length": 1.6, "last_gen_throughput": 56.8}]
    info = msgspec_to_builtins(
        redact_watermark_secrets(
            {
                **build_server_info(args, scheduler_info),
                "startup_time": 31.0,
                "internal_states": internal,
                "version": __version__,
                "frontend": "python",
            }
        )
    )
    info["_fixture_stand_ins"] = ["max_total_num_tokens", "max_req_input_len", "status", "internal_states",
                                  "startup_time"]  # fmt: skip
    return info


def metrics() -> str:
    import prometheus_client
    from sglang.srt.observability.metrics_collector import TokenizerMetricsCollector

    labels = {"model_name": MODEL_NAME, "engine_type": "unified"}
    collector = TokenizerMetricsCollector(labels=labels)
    for completion, verify, _acc, _hist in REQUESTS:
        collector.observe_one_finished_request(
            labels, prompt_tokens=64, generation_tokens=completion, cached_tokens=0, e2e_latency=1.0,
            has_grammar=False, spec_verify_ct=verify,
        )  # fmt: skip
    return prometheus_client.generate_latest(prometheus_client.REGISTRY).decode()


def completion() -> dict:
    from sglang.srt.entrypoints.openai.protocol import (
        CompletionResponse,
        CompletionResponseChoice,
        SglExt,
        UsageInfo,
    )
    from sglang.srt.entrypoints.openai.utils import spec_tokens_details_from_meta_info
    from sglang.srt.managers import tokenizer_manager

    completion_tokens, verify, accepted, hist = REQUESTS[0]
    batch = SimpleNamespace(
        spec_verify_ct=[verify], spec_num_correct_drafts=[accepted], completion_tokens=[completion_tokens],
        spec_correct_drafts_histogram=[hist], spec_num_cap_tokens=None, spec_num_block_accept_tokens=None,
    )  # fmt: skip
    meta_info: dict = {}
    tokenizer_manager.TokenizerManager._calculate_spec_decoding_metrics(None, meta_info, batch, 0)
    details = spec_tokens_details_from_meta_info(meta_info)
    response = CompletionResponse(
        id="cmpl-fixture", model=MODEL_NAME,
        choices=[CompletionResponseChoice(index=0, text="...", finish_reason="length")],
        usage=UsageInfo(prompt_tokens=64, completion_tokens=completion_tokens, total_tokens=64 + completion_tokens),
        sglext=SglExt(spec_tokens_details=details),
    )  # fmt: skip
    return json.loads(response.model_dump_json())


def main(target: str, drafter: str, out: str) -> None:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    kimi = server_info(launch(target, drafter, KIMI))
    (folder / "sglang-0.5.23-server_info-kimi-flags.json").write_text(json.dumps(kimi, indent=1, default=str))
    chain = server_info(launch(target, drafter, CHAIN3))  # published: the metrics and details below use it
    (folder / "sglang-0.5.23-server_info-k3.json").write_text(json.dumps(chain, indent=1, default=str))
    (folder / "sglang-0.5.23-metrics-k3.txt").write_text(metrics())
    (folder / "sglang-0.5.23-completion-k3.json").write_text(json.dumps(completion(), indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:4])
