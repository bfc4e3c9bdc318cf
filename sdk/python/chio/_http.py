"""HTTP for the asyncio client: one blocking urllib request per daemon thread.

Why threads and urllib, not asyncio streams: urllib brings TLS with
certificate checks, proxies from the environment (never for a loopback
chiod), chunked bodies and HTTP error handling from the standard library,
where an HTTP/1.1 client on asyncio streams would be ours to write and to
get right. The cost is a
thread per request in flight, which is small next to a network round trip;
every request has a time limit (a timer that cuts its connection: a socket
timeout bounds each read, not an answer arriving a byte at a time), so a
thread whose caller was cancelled ends by itself (at most a long-poll plus
a margin later). Daemon threads do not hold up interpreter exit, as a
ThreadPoolExecutor's would.
"""

from __future__ import annotations

import asyncio
import functools
import http.client
import ipaddress
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, TypeVar

from .errors import BadAnswer, TransportError

# Untrusted input meets a limit first: chiod's answers are small JSON; the
# largest is a tool's output.
MAX_RESPONSE_BYTES = 16 << 20

T = TypeVar("T")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A proof or token is meant for one server: never follow a redirect
    (urllib would re-send to wherever Location points)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class _NoConnection(OSError):
    """No connection could be made (refused, no route, a name that does not
    resolve, a connection not ready within the connect timeout), or the
    request was given up before its connection was ready: not a byte of the
    request was written. Raised only while making the connection, so a TLS
    handshake that failed (rather than ran out of time), a proxy's refusal,
    a reset or a timeout after connecting is never it."""


class ConnectFailed(TransportError):
    """A TransportError whose request was never sent (_NoConnection).
    call_tool reports a call whose every attempt met this as NotSent."""


class Attempt:
    """One request's connection, between the thread that makes it and the
    task that awaits it. The thread calls ready() once the connection is
    made (for https, after the TLS handshake) and before it writes a byte of
    the request; the task calls give_up() when it stops waiting (its
    deadline, or its cancellation). Whichever comes first decides: a request
    given up before its connection was ready is never written, and one
    whose connection was ready may have been."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = False
        self._given_up = False
        self._sock: socket.socket | None = None
        self.expired = False  # the request's time limit passed (expire)

    def ready(self, sock: socket.socket | None = None) -> bool:
        """The connection (sock) is ready: False if the request was given up
        or its time limit passed (the thread must then write nothing)."""
        with self._lock:
            if self._given_up or self.expired:
                return False
            self._ready = True
            self._sock = sock
            return True

    def expire(self) -> None:
        """The request's time limit passed: cut its connection. A socket
        timeout bounds each read, not the request, so an answer arriving a
        byte at a time would outlast it; a read blocked on this connection
        ends now, and request() reports the request as unanswered."""
        with self._lock:
            self.expired = True
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed

    def give_up(self) -> bool:
        """Stop waiting: True if the connection was never ready, so nothing
        of the request was, or will be, written."""
        with self._lock:
            self._given_up = True
            return not self._ready


def _marking_connect(cls):
    """cls (an http.client connection class) whose connect is bounded by
    connect_timeout, reports a connection not made as _NoConnection, and
    asks attempt before the request may be written."""

    class Marked(cls):
        def __init__(self, *args, connect_timeout: float, attempt: Attempt, **kwargs):
            super().__init__(*args, **kwargs)
            self._chio_connect_timeout = connect_timeout
            self._chio_attempt = attempt
            create = self._create_connection  # set per instance by http.client

            def create_connection(*a, **kw):
                try:
                    return create(*a, **kw)
                except OSError as e:
                    raise _NoConnection(*e.args) from e

            self._create_connection = create_connection

        def connect(self):
            # The TCP connect and (https) the TLS handshake get the connect
            # timeout; the answer gets the request's own timeout.
            request_timeout = self.timeout
            self.timeout = min(self._chio_connect_timeout, request_timeout)
            try:
                super().connect()
            except TimeoutError as e:  # the TLS handshake (or a proxy's CONNECT) ran out of time
                raise _NoConnection(f"no connection within the connect timeout ({self.timeout} s): {e}") from e
            finally:
                self.timeout = request_timeout
            self.sock.settimeout(request_timeout)
            if not self._chio_attempt.ready(self.sock):
                self.sock.close()
                raise _NoConnection("the request was given up before its connection was ready")

    return Marked


_MARKED = {cls: _marking_connect(cls) for cls in (http.client.HTTPConnection, http.client.HTTPSConnection)}


class _Marking:
    """A urllib handler that opens its connections with _marking_connect,
    for one request (connect_timeout, attempt)."""

    def do_open(self, http_class, req, **kwargs):
        marked = functools.partial(_MARKED[http_class], connect_timeout=self.chio_connect_timeout, attempt=self.chio_attempt)
        return super().do_open(marked, req, **kwargs)


class _HTTPHandler(_Marking, urllib.request.HTTPHandler):
    pass


class _HTTPSHandler(_Marking, urllib.request.HTTPSHandler):
    pass


def _opener(url: str, connect_timeout: float, attempt: Attempt) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = [_HTTPHandler(), _HTTPSHandler()]
    for h in handlers:
        h.chio_connect_timeout, h.chio_attempt = connect_timeout, attempt
    if _loopback(urllib.parse.urlsplit(url).hostname or ""):
        # No proxy from the environment (http_proxy) for a chiod on this
        # machine: the proxy cannot reach it, and would see every call and
        # proof. As the Go SDK (net/http's ProxyFromEnvironment).
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(_NoRedirect, *handlers)


def _loopback(host: str) -> bool:
    """Whether host is this machine: localhost or a loopback address."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def request(
    method: str,
    url: str,
    body: bytes | None,
    headers: dict[str, str],
    timeout: float,
    connect_timeout: float | None = None,
    attempt: Attempt | None = None,
) -> tuple[int, bytes]:
    """Send one request and return (status, body), whatever the status.
    Raises TransportError when no complete HTTP answer came back within
    timeout (the whole request: connecting, sending, the answer's head and
    body), and its ConnectFailed when no connection could even be made
    (within connect_timeout, default timeout) or attempt was given up first."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    attempt = attempt or Attempt()
    opener = _opener(url, timeout if connect_timeout is None else connect_timeout, attempt)
    limit = threading.Timer(timeout, attempt.expire)
    limit.daemon = True
    limit.start()
    try:
        try:
            resp = opener.open(req, timeout=timeout)
        except urllib.error.HTTPError as e:  # a 4xx/5xx answer is still an answer
            resp = e
        with resp:
            answer = Answer((resp.code, _read(resp)), resp.headers.get("Retry-After"))
        limit.cancel()
        if attempt.expired:
            # The connection was cut: what was read may be cut short too.
            raise _TimeLimit()
        return answer
    except (urllib.error.URLError, http.client.HTTPException, OSError, _TimeLimit, TransportError) as e:
        reason = getattr(e, "reason", None) or e
        if isinstance(reason, _NoConnection):
            raise ConnectFailed(f"chio: cannot connect to chiod at {url}: {reason}") from None
        if attempt.expired:
            raise TransportError(f"chio: no complete answer from chiod at {url} within the request's time limit ({timeout} s)") from None
        if isinstance(e, TransportError):
            raise
        raise TransportError(f"chio: cannot reach chiod at {url}: {reason}") from None
    finally:
        limit.cancel()


class _TimeLimit(Exception):
    """request()'s time limit passed while its answer was being read."""


class Answer(tuple):
    """(status, body), and the answer's Retry-After header (None if absent)."""

    def __new__(cls, status_body: tuple[int, bytes], retry_after: str | None):
        self = super().__new__(cls, status_body)
        self.retry_after = retry_after
        return self


def _read(resp) -> bytes:
    data = resp.read(MAX_RESPONSE_BYTES + 1)
    if len(data) > MAX_RESPONSE_BYTES:
        raise BadAnswer(f"chio: response larger than {MAX_RESPONSE_BYTES} bytes")
    # read(amt) returns a body cut short (the connection closed before
    # Content-Length bytes) without raising IncompleteRead. Such an answer
    # is lost, not malformed: the call may have run, so it must be a
    # TransportError, which call_tool retries with the same request id.
    # (A cut chunked body does raise IncompleteRead, caught by request().)
    want = resp.headers.get("Content-Length")
    if want is not None and resp.headers.get("Transfer-Encoding") is None:
        try:
            n = int(want)
        except ValueError:
            raise TransportError(f"chio: bad Content-Length {want!r} from chiod") from None
        if len(data) != n:
            raise TransportError(f"chio: answer cut short: {len(data)} of {n} bytes")
    return data


def in_thread(fn: Callable[..., T], *args) -> "asyncio.Future[T]":
    """Run fn(*args) on a new daemon thread; the returned future (of the
    running loop) gets its result or exception."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future = loop.create_future()

    def settle(ok: bool, value) -> None:
        if fut.done():  # cancelled by the caller meanwhile
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    def target() -> None:
        try:
            result = (True, fn(*args))
        except BaseException as e:  # handed to the awaiting task
            result = (False, e)
        try:
            loop.call_soon_threadsafe(settle, *result)
        except RuntimeError:
            pass  # the loop has closed: nobody is waiting any more

    threading.Thread(target=target, name="chio-http", daemon=True).start()
    return fut
