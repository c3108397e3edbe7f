"""SGLang's speculative-decoding counters and the endpoints its server tells itself by.

SGLang's Prometheus counters (with --enable-metrics) hold only the verify calls and the generated tokens of
finished requests; per position it reports only per request (`SpecTokensDetails`). Its server publishes
`GET /server_info` (`/get_server_info` before 0.5.x renamed it): every resolved server argument (the speculative
settings and the draft model path), `launch_command` (what was asked for), `version`; and `GET /model_info`
(`/get_model_info`).
"""

from __future__ import annotations

from eaglewire.rules.metrics import CounterRow, EndpointRow

ROWS: tuple[CounterRow, ...] = (
    CounterRow(
        "sglang", ">=0.5.13",
        "sglang:spec_verify_calls_total", None, None, None,
        "sglang:generation_tokens_total", "sglang:num_requests_total",
        "sglang 0.5.23 srt/observability/metrics_collector.py:1855-1869 (generation_tokens_total, "
        "spec_verify_calls_total), :2101-2112 (incremented once per finished request); first in 0.5.13 "
        "(metrics_collector.py:1438-1441, incremented :1647-1648), none in 0.5.12",
    ),
)  # fmt: skip

ENDPOINTS = EndpointRow(
    "sglang", "",
    ("/server_info", "/get_server_info"),
    ("/model_info", "/get_model_info"),
    (
        "speculative_algorithm", "speculative_draft_model_path", "speculative_num_steps", "speculative_eagle_topk",
        "speculative_num_draft_tokens",
    ),
    "sglang 0.5.23 srt/entrypoints/http_server.py:853-891 (/server_info = build_server_info: "
    "resolved_dict + launch_command + scheduler info, utils/common.py:3584-3593), :802-812 (/model_info), "
    ":1993-2022 (/v1/models)",
)  # fmt: skip
