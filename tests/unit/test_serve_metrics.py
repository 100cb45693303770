"""/metrics: the counters shared by worker processes, their Prometheus text, and the per-request measurement."""

from __future__ import annotations

import asyncio
import logging
import os
import re

from casstor_ops.serve.metrics import BUCKETS_S, Metrics
from casstor_ops.serve.observe import observed


def _series(text: str) -> dict[str, float]:
    """The samples of a Prometheus text exposition, by series name with labels."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


def test_every_line_is_prometheus_text_format() -> None:
    sample = re.compile(r'[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+-]+')
    for line in Metrics().render().splitlines():
        assert line.startswith(("# HELP ", "# TYPE ")) or sample.fullmatch(line), line


def test_requests_bytes_latency_and_errors_are_counted() -> None:
    metrics = Metrics()
    recorder = metrics.recorder(0)
    recorder.request("PUT", 200, 65536, 120, 0.004)
    recorder.request("GET", 404, 0, 20, 0.0005)
    recorder.request("PATCH", 405, 0, 30, 0.0001)
    recorder.request("GET", 206, 0, 100, 50.0)
    recorder.error("not_found")
    series = _series(metrics.render())
    assert series['casstor_serve_requests_total{method="PUT",status="2xx"}'] == 1
    assert series['casstor_serve_requests_total{method="GET",status="4xx"}'] == 1
    assert series['casstor_serve_requests_total{method="other",status="4xx"}'] == 1
    assert series["casstor_serve_received_bytes_total"] == 65536
    assert series["casstor_serve_sent_bytes_total"] == 270
    get = 'casstor_serve_request_duration_seconds_bucket{method="GET",le="%s"}'
    assert series[get % "0.001"] == 1 and series[get % repr(BUCKETS_S[-1])] == 1 and series[get % "+Inf"] == 2
    assert series['casstor_serve_request_duration_seconds_count{method="GET"}'] == 2
    assert series['casstor_serve_request_duration_seconds_sum{method="GET"}'] == 50.0005
    assert series['casstor_serve_errors_total{kind="not_found"}'] == 1


def test_forked_workers_write_their_own_slots_and_any_of_them_renders_the_sum() -> None:
    metrics = Metrics(workers=2)
    pids = []
    for worker in range(2):
        pid = os.fork()
        if pid == 0:
            try:
                for _ in range(worker + 1):
                    metrics.recorder(worker).request("GET", 200, 0, 10, 0.01)
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        assert os.waitpid(pid, 0)[1] == 0
    series = _series(metrics.render())
    assert series['casstor_serve_requests_total{method="GET",status="2xx"}'] == 3
    assert series["casstor_serve_sent_bytes_total"] == 30 and series["casstor_serve_workers"] == 2


def _call(app, method: str, body_parts: list[bytes]) -> None:
    scope = {"type": "http", "method": method, "raw_path": b"/a%20b", "client": ("127.0.0.1", 4321)}
    parts = [{"type": "http.request", "body": p, "more_body": i < len(body_parts) - 1}
             for i, p in enumerate(body_parts)]

    async def receive():
        return parts.pop(0)

    async def send(message):
        pass

    asyncio.run(app(scope, receive, send))


def test_observed_counts_what_the_app_received_and_sent_and_logs_one_line(caplog) -> None:
    async def app(scope, receive, send):
        while (await receive())["more_body"]:
            pass
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})

    metrics = Metrics()
    with caplog.at_level(logging.INFO, logger="casstor.serve"):
        _call(observed(app, metrics.recorder(0), access_log=True), "PUT", [b"12", b"345"])
        _call(observed(app, metrics.recorder(0), access_log=False), "PUT", [b"6"])
    series = _series(metrics.render())
    assert series['casstor_serve_requests_total{method="PUT",status="2xx"}'] == 2
    assert (series["casstor_serve_received_bytes_total"], series["casstor_serve_sent_bytes_total"]) == (6, 8)
    [line] = [r.getMessage() for r in caplog.records]
    assert re.fullmatch(r'127\.0\.0\.1:4321 "PUT /a%20b" 201 in=5 out=4 [0-9.]+ms', line), line
