"""A small HTTP client for a serving engine's own endpoints (standard library only, no proxies: the probe talks
to the server it names, never through an environment proxy). Every failure is one line naming the URL."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from eaglewire.errors import InputError

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class Reply:
    status: int  # 0: no HTTP answer at all
    body: str


def base_url(url: str) -> str:
    """`http://host:port` from what the user typed (`host:port`, a trailing slash or `/v1` are accepted)."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"{url}: not a server URL (write http://HOST:PORT)")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


class Http:
    """GET and POST against one server; `timeout` bounds each call (seconds)."""

    def __init__(self, url: str, timeout: float = 10.0):
        self.base = base_url(url)
        self.timeout = timeout

    def _call(self, path: str, data: bytes | None, timeout: float | None) -> Reply:
        req = urllib.request.Request(
            self.base + path, data=data, method="POST" if data is not None else "GET"
        )
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with _OPENER.open(req, timeout=timeout or self.timeout) as resp:
                return Reply(resp.status, resp.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as e:
            return Reply(e.code, e.read().decode("utf-8", "replace") if e.fp else "")
        except urllib.error.URLError as e:
            reason = e.reason
            if isinstance(reason, ConnectionRefusedError):
                raise InputError(
                    f"{self.base}: connection refused (is the server running on that port?)"
                ) from None
            if isinstance(reason, TimeoutError):
                raise InputError(
                    f"{self.base}{path}: no answer within {timeout or self.timeout:.0f} s"
                ) from None
            raise InputError(f"{self.base}: cannot connect ({reason})") from None
        except TimeoutError:
            raise InputError(f"{self.base}{path}: no answer within {timeout or self.timeout:.0f} s") from None
        except (ConnectionError, OSError) as e:
            raise InputError(f"{self.base}{path}: connection failed ({e.__class__.__name__})") from None

    def get(self, path: str, timeout: float | None = None) -> Reply:
        return self._call(path, None, timeout)

    def post(self, path: str, body: dict, timeout: float | None = None) -> Reply:
        return self._call(path, json.dumps(body).encode(), timeout)

    def json(self, reply: Reply, path: str) -> Any:
        try:
            return json.loads(reply.body)
        except json.JSONDecodeError:
            raise InputError(f"{self.base}{path}: the answer is not JSON ({reply.body[:60]!r})") from None
