"""A real chiod for the tests.

The binaries come from CHIO_BIN_DIR (CI builds them once with
`go build -o DIR ./cmd/chiod ./cmd/chio`) or are built here into a temporary
directory. chiod listens on a free loopback port (-listen 127.0.0.1:0; the
address is read from its log), keeps its data in a temporary directory and
runs testdata/sdk/policy.toml. CHIO_ADMIN_TOKEN is not set, so chiod writes
<data_dir>/admin.token; agents get keys from `chio keygen` and capabilities
from `chio capability issue` with that token, as an operator would.

One chiod serves every test of a run; it stops at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
POLICY = os.path.join(ROOT, "testdata", "sdk", "policy.toml")
FINANCE_LEAD_KEY = os.path.join(ROOT, "examples", "keys", "finance-lead.pem")
_ADDR = re.compile(r'"chiod serving" addr=(\S+)')


@dataclass
class Agent:
    key_file: str
    capability_file: str
    public_key: str

    def env(self, url: str) -> dict[str, str]:
        """The environment Client.from_env reads."""
        return {"CHIO_URL": url, "CHIO_KEY": self.key_file, "CHIO_CAPABILITY": self.capability_file}


class Chiod:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="chio-py-sdk-")
        self.bin_dir = os.environ.get("CHIO_BIN_DIR") or self._build()
        self.data_dir = os.path.join(self.tmp, "data")
        self.log: list[str] = []
        self.url = ""
        self.admin_token = ""
        self._agents = 0
        self.proc: subprocess.Popen | None = None

    def _build(self) -> str:
        out = os.path.join(self.tmp, "bin")
        os.makedirs(out)  # go build -o writes several binaries only into a directory that exists
        subprocess.run(["go", "build", "-o", out, "./cmd/chiod", "./cmd/chio"], cwd=ROOT, check=True)
        return out

    def start(self) -> "Chiod":
        """Start chiod; after a stop(), on the same address and data."""
        env = {k: v for k, v in os.environ.items() if k not in ("CHIO_ADMIN_TOKEN", "CHIO_READ_TOKEN")}
        listen = self.url.removeprefix("http://") or "127.0.0.1:0"
        self.proc = subprocess.Popen(
            [os.path.join(self.bin_dir, "chiod"), "-config", POLICY, "-listen", listen, "-data-dir", self.data_dir],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        found = threading.Event()

        def drain():  # keep reading, or chiod blocks on a full pipe
            for line in self.proc.stderr:
                self.log.append(line)
                m = _ADDR.search(line)
                if m and not found.is_set():
                    self.url = "http://" + m.group(1)
                    found.set()

        self._drain = threading.Thread(target=drain, daemon=True)
        self._drain.start()
        if not found.wait(30):
            self.stop()
            raise RuntimeError("chiod did not start:\n" + "".join(self.log))
        with open(os.path.join(self.data_dir, "admin.token")) as f:
            self.admin_token = f.read().strip()
        return self

    def stop(self) -> None:
        """Stop chiod (SIGINT, as an operator would); its data stays."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self._drain.join(5)  # EOF once chiod has exited
            self.proc.stderr.close()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def ledger(self) -> list[dict]:
        """The demo issue_refund tool's ledger: one line per refund made."""
        try:
            with open(os.path.join(self.data_dir, "builtin", "ledger.jsonl")) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def chio(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run the real CLI against this chiod, as the operator."""
        e = {**os.environ, "CHIO_URL": self.url, "CHIO_ADMIN_TOKEN": self.admin_token, **(env or {})}
        p = subprocess.run([os.path.join(self.bin_dir, "chio"), *args], env=e, cwd=ROOT, capture_output=True, text=True, timeout=120)
        if check and p.returncode != 0:
            raise AssertionError(f"chio {' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        return p

    def new_agent(self, *grants: str) -> Agent:
        """A fresh agent key (`chio keygen`) and a capability for grants."""
        self._agents += 1
        d = os.path.join(self.tmp, f"agent{self._agents}")
        os.makedirs(d)
        key_file, cap_file = os.path.join(d, "agent.pem"), os.path.join(d, "agent.cap")
        pub = self.chio("keygen", "--out", key_file).stdout.strip().split()[-1]
        if not pub.startswith("ed25519:"):
            raise AssertionError(f"chio keygen printed {pub!r}")
        args = ["capability", "issue", "--subject", pub, "--ttl", "1h", "--out", cap_file]
        for g in grants:
            args += ["--grant", g]
        self.chio(*args)
        return Agent(key_file, cap_file, pub)

    def approve(self, approval_id: str, *extra: str) -> subprocess.CompletedProcess:
        """The Finance Lead approves with the real CLI."""
        return self.chio("approval", "approve", approval_id, "--key", FINANCE_LEAD_KEY, *extra)


_chiod: Chiod | None = None
_lock = threading.Lock()


def chiod() -> Chiod:
    """The run's chiod, started on first use."""
    global _chiod
    with _lock:
        if _chiod is None:
            _chiod = Chiod().start()
            atexit.register(_chiod.close)
        return _chiod


async def agent(*grants: str) -> Agent:
    """chiod().new_agent off the event loop (it runs the CLI twice)."""
    return await asyncio.to_thread(chiod().new_agent, *grants)


@contextlib.contextmanager
def environ(values: dict[str, str]):
    """Set environment variables for the duration (the sketches read
    CHIO_URL, CHIO_KEY and CHIO_CAPABILITY)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def wait_until(pred, timeout: float = 20.0, every: float = 0.05):
    """Poll pred() until it returns something truthy."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(every)


def forward(target: str, handler: http.server.BaseHTTPRequestHandler, body: bytes | None) -> tuple[int, bytes]:
    """Sends the request handler is serving to chiod at target, with the
    headers chio's clients use, and returns chiod's status and body: the
    test proxies' one way to reach chiod."""
    req = urllib.request.Request(target + handler.path, data=body, method=handler.command)
    for k in ("Content-Type", "Accept", "Authorization", "Chio-Proof", "Idempotency-Key"):
        if handler.headers.get(k):
            req.add_header(k, handler.headers[k])
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def vote_uncertain_fixture() -> dict:
    """testdata/sdk/vote_uncertain.json: chiod's answer to a vote whose own
    commit may or may not have landed."""
    with open(os.path.join(ROOT, "testdata", "sdk", "vote_uncertain.json"), encoding="utf-8") as f:
        return json.load(f)


class FlakyProxy:
    """An HTTP proxy in front of chiod that fails some POST /v1/calls on
    purpose, to test retries. faults is consumed in order, one per POST:
    "drop" forwards the call and closes the connection without answering
    (the decision is made, the answer is lost); "502" forwards and answers a
    gateway's 502 page; "503" answers 503 without forwarding; "dispatching" forwards and answers as chiod does a retry
    that meets the call still in flight (202, status dispatching, no
    approval id); "pass" forwards. Every POST body is kept in bodies, every
    request's method and path in requests.

    With vote_recorded, every POST /approvals/{id}/respond is forwarded
    (chiod records the vote for real) and a 200 is then answered as chiod
    answers when a step after the vote's commit failed: 500 with its
    envelope {"error":"vote_recorded","message":...} (internal/httpapi/
    errors.go, kernel/vote_recorded.go); responds counts those POSTs.

    With vote_uncertain, the first POST /approvals/{id}/respond is
    forwarded (chiod records the vote for real) and a 200 is then answered
    as chiod answers a vote whose own commit may or may not have landed:
    testdata/sdk/vote_uncertain.json's envelope, which the Go SDK's tests
    check is the real API's answer. Later responds pass through."""

    def __init__(self, target: str, faults: list[str], vote_recorded: bool = False, vote_uncertain: bool = False):
        proxy = self
        self.faults, self.bodies, self.requests = list(faults), [], []
        self.responds = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _forward(self, body):
                return forward(target, self, body)

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                proxy.requests.append((self.command, self.path))
                fault = "pass"
                if self.command == "POST" and self.path == "/v1/calls":
                    proxy.bodies.append(body)
                    fault = proxy.faults.pop(0) if proxy.faults else "pass"
                if fault == "503":
                    status, data = 503, b'{"error":"unavailable","message":"injected by the test proxy"}'
                else:
                    status, data = self._forward(body)
                if fault == "502":  # a gateway that forwarded the call and lost the answer
                    status, data = 502, b"<html><body><h1>502 Bad Gateway</h1></body></html>"
                if fault == "dispatching":
                    out = json.loads(data)
                    status = 202
                    data = json.dumps({"status": "dispatching", "request_id": out["request_id"], "receipt_id": out["receipt_id"]}).encode()
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if vote_recorded and self.command == "POST" and self.path.endswith("/respond"):
                    proxy.responds += 1
                    if status == 200:
                        aid = self.path.split("/")[2]
                        msg = (
                            f"your vote on {aid} is recorded and approved it, but the approved call is not finished yet "
                            "(chio finishes it once its store recovers; do not vote again): store unavailable: the store went down"
                        )
                        status, data = 500, (json.dumps({"error": "vote_recorded", "message": msg}) + "\n").encode()
                if vote_uncertain and self.command == "POST" and self.path.endswith("/respond"):
                    proxy.responds += 1
                    if status == 200 and proxy.responds == 1:
                        fx = vote_uncertain_fixture()
                        msg = fx["message"].replace("{approval_id}", self.path.split("/")[2])
                        status, data = fx["status"], (json.dumps({"error": fx["error"], "message": msg}) + "\n").encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
