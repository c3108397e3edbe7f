"""Where an SGLang server says which platform it runs on: `GET /server_info` holds every resolved server argument,
the device among them (`device`: "cuda", "cpu", "npu", ...; the --device argument, sglang 0.5.23
arg_groups/field_order.py:106, srt/entrypoints/http_server.py:853-891 for /server_info). Observed "cuda" in
tests/probe_data/sglang-0.5.23-server_info-*.json (SGLang's own code, its GPU queries answered as an H200). SGLang
has one model runner per release: there is no runner to read."""

from __future__ import annotations

DEVICE_KEY = "device"
SOURCE = "sglang 0.5.23 /server_info: the resolved --device (arg_groups/field_order.py:106)"
