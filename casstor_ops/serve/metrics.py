"""The server's counters, shared by its worker processes, and their Prometheus text (``GET /metrics``).

Counted per request: requests by method and status class, bytes received
(request bodies) and sent (response bodies), a latency histogram by method
(from the request's arrival to its last byte sent), and failures by kind
(:data:`casstor_ops.serve.status.KINDS`), and GETs of small files that
found their content in the content cache or not. The counters live in one
anonymous shared memory map, made before ``--workers`` forks, with one slot of float64
counters per worker: each slot has a single writer (its worker's event loop
thread), so no lock is needed, and :meth:`Metrics.render` sums the slots, so
whichever worker answers ``/metrics`` reports the whole server. Counts are
exact as float64 up to 2**53.

Example::

    >>> metrics = Metrics(workers=1)
    >>> metrics.recorder(0).request("GET", 200, 0, 5, 0.003)
    >>> 'casstor_serve_requests_total{method="GET",status="2xx"} 1' in metrics.render()
    True

Failures: none (an unknown method is counted as ``other``, an unknown kind
raises ValueError: a bug).
"""

from __future__ import annotations

import bisect
import mmap

from casstor_ops.serve.status import KINDS

METHODS = ("GET", "HEAD", "PUT", "DELETE", "other")
STATUS_CLASSES = ("1xx", "2xx", "3xx", "4xx", "5xx")
BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# One slot's layout: requests[method][class], bytes in, bytes out, histogram[method][bucket..+Inf],
# latency sum[method], errors[kind], cache hits, cache misses.
_REQUESTS = 0
_BYTES_IN = _REQUESTS + len(METHODS) * len(STATUS_CLASSES)
_BYTES_OUT = _BYTES_IN + 1
_HISTOGRAM = _BYTES_OUT + 1
_SUMS = _HISTOGRAM + len(METHODS) * (len(BUCKETS_S) + 1)
_ERRORS = _SUMS + len(METHODS)
_CACHE = _ERRORS + len(KINDS)  # content cache hits, misses
_SLOT = _CACHE + 2


class Recorder:
    """One worker's slot: only that worker's event loop writes it."""

    def __init__(self, values: memoryview, slot: int) -> None:
        self._values = values
        self._base = slot * _SLOT

    def _add(self, index: int, amount: float = 1.0) -> None:
        self._values[self._base + index] += amount

    def request(self, method: str, status: int, bytes_in: int, bytes_out: int, seconds: float) -> None:
        """Count one answered request."""
        m = METHODS.index(method) if method in METHODS else len(METHODS) - 1
        status_class = min(max(status // 100, 1), 5) - 1
        self._add(_REQUESTS + m * len(STATUS_CLASSES) + status_class)
        self._add(_BYTES_IN, bytes_in)
        self._add(_BYTES_OUT, bytes_out)
        self._add(_HISTOGRAM + m * (len(BUCKETS_S) + 1) + bisect.bisect_left(BUCKETS_S, seconds))
        self._add(_SUMS + m, seconds)

    def error(self, kind: str) -> None:
        """Count one failure of ``kind``."""
        self._add(_ERRORS + KINDS.index(kind))

    def cache(self, hit: bool) -> None:
        """Count one GET of a small file that found its content in the content cache (``hit``) or read it."""
        self._add(_CACHE + (0 if hit else 1))


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


class Metrics:
    """Counters for ``workers`` worker processes (make it before forking them)."""

    def __init__(self, workers: int = 1) -> None:
        self._memory = mmap.mmap(-1, workers * _SLOT * 8)  # anonymous and MAP_SHARED: forked workers share it
        self._values = memoryview(self._memory).cast("d")
        self._workers = workers

    def recorder(self, worker: int) -> Recorder:
        return Recorder(self._values, worker)

    def _total(self, index: int) -> float:
        return sum(self._values[w * _SLOT + index] for w in range(self._workers))

    def render(self) -> str:
        """The Prometheus text exposition (format 0.0.4) of every counter, summed over the workers."""
        lines = ["# HELP casstor_serve_requests_total Requests answered, by method and status class.",
                 "# TYPE casstor_serve_requests_total counter"]
        for m, method in enumerate(METHODS):
            for c, status in enumerate(STATUS_CLASSES):
                value = self._total(_REQUESTS + m * len(STATUS_CLASSES) + c)
                lines.append(f'casstor_serve_requests_total{{method="{method}",status="{status}"}} {_number(value)}')
        lines += self._counter("casstor_serve_received_bytes_total", _BYTES_IN, "Request body bytes received.")
        lines += self._counter("casstor_serve_sent_bytes_total", _BYTES_OUT, "Response body bytes sent.")
        lines += ["# HELP casstor_serve_request_duration_seconds From a request's arrival to its last byte sent.",
                  "# TYPE casstor_serve_request_duration_seconds histogram"]
        for m, method in enumerate(METHODS):
            lines += self._histogram(m, method)
        lines += ["# HELP casstor_serve_errors_total Failed requests, by kind (docs/serve.md, Statuses).",
                  "# TYPE casstor_serve_errors_total counter"]
        lines += [f'casstor_serve_errors_total{{kind="{kind}"}} {_number(self._total(_ERRORS + k))}'
                  for k, kind in enumerate(KINDS)]
        lines += self._counter("casstor_serve_cache_hits_total", _CACHE,
                               "GETs of a small file answered from the content cache.")
        lines += self._counter("casstor_serve_cache_misses_total", _CACHE + 1,
                               "GETs of a small file that read its content.")
        lines += ["# HELP casstor_serve_workers Worker processes serving requests.",
                  "# TYPE casstor_serve_workers gauge", f"casstor_serve_workers {self._workers}"]
        return "\n".join(lines) + "\n"

    def _counter(self, name: str, index: int, what: str) -> list[str]:
        """One unlabelled counter: its help, its type and its value."""
        return [f"# HELP {name} {what}", f"# TYPE {name} counter", f"{name} {_number(self._total(index))}"]

    def _histogram(self, m: int, method: str) -> list[str]:
        base = _HISTOGRAM + m * (len(BUCKETS_S) + 1)
        name = "casstor_serve_request_duration_seconds"
        lines, cumulative = [], 0.0
        for b, bound in enumerate((*map(repr, BUCKETS_S), "+Inf")):
            cumulative += self._total(base + b)
            lines.append(f'{name}_bucket{{method="{method}",le="{bound}"}} {_number(cumulative)}')
        lines += [f'{name}_sum{{method="{method}"}} {_number(self._total(_SUMS + m))}',
                  f'{name}_count{{method="{method}"}} {_number(cumulative)}']
        return lines
