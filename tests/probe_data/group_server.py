"""A process tree that serves /health, for the tests of `probe/launch.py` (the process handling, not an engine).

    python group_server.py --host 127.0.0.1 --port P --pidfile F [--slow-models S] [--exit-code C] [--shm NAME]

It starts a child that sleeps (so stopping must reach the whole process group, not only the leader), writes
"<own pid> <child pid>" to the pid file, then answers GET /health with 200 and GET /v1/models after S seconds
with 404. `--exit-code C` prints an error line and exits with C at once (a failed start). `--shm NAME`: the child
creates /dev/shm/NAME and maps it, and nobody unlinks it (as vLLM's CPU all-reduce buffer, killed by a signal).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pidfile", required=True)
    ap.add_argument("--slow-models", type=float, default=0.0)
    ap.add_argument("--exit-code", type=int, default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--shm", default=None)
    args, _ = ap.parse_known_args()
    if args.exit_code is not None:
        print("ValueError: boom (a failed start)", flush=True)
        sys.exit(args.exit_code)
    hold = "import time; time.sleep(600)"
    if args.shm:
        hold = (f"import mmap, os, time; fd = os.open('/dev/shm/{args.shm}', os.O_CREAT | os.O_RDWR, 0o600); "
                "os.ftruncate(fd, 1 << 20); m = mmap.mmap(fd, 1 << 20); os.close(fd); m[:4] = b'shm!'; "
                "print('mapped', flush=True); time.sleep(600)")  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-c", hold], stdout=subprocess.PIPE if args.shm else None, text=True
    )
    if args.shm:
        child.stdout.readline()  # mapped before the server is healthy
    with open(args.pidfile, "w") as fh:
        fh.write(f"{__import__('os').getpid()} {child.pid}\n")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/health":
                self.send_response(200)
                self.end_headers()
                return
            if self.path == "/v1/models":
                time.sleep(args.slow_models)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *a):
            pass

    HTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
