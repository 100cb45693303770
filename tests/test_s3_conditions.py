"""Conditional writes across two ``casstor serve --s3`` processes (gateways sharing only Cassandra).

Each round, two threads PUT one new key with ``If-None-Match: *`` at the
same instant, one through each gateway: exactly one must win (200) and the
other get 412, every round. Then If-Match races: both name the ETag they
read, exactly one replaces it. And a turn is fenced: a writer paused under
its turn past the turn's working time sends no head write.
"""

from __future__ import annotations

import io
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import boto3
import pytest
from botocore.client import Config
from botocore.exceptions import ClientError

from casstor_ops.errors import NotFoundError
from casstor_ops.serve.process import ServerProcess
from casstor_ops.serve.s3 import conditions
from casstor_ops.serve.s3.conditions import ConditionTurns
from casstor_ops.serve.s3.errors import S3Error
from casstor_ops.store.api import Store
from casstor_ops.store.coordination.safety import SAFETY
from casstor_ops.store.cql.statements import Statements

from .s3_support import KEY, SECRET

ROUNDS = 20


@pytest.fixture(scope="module")
def gateways(cql, credentials: Path) -> Iterator[list]:  # noqa: F811
    servers = [ServerProcess("--s3", "--s3-credentials", str(credentials), "--lease-reuse", "2") for _ in range(2)]
    yield [boto3.client("s3", region_name="us-east-1", endpoint_url=f"http://{s.host}:{s.port}",
                        aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                      retries={"max_attempts": 1})) for s in servers]
    for server in servers:
        code, log = server.stop()
        assert code == 0, log


def _race(calls: list) -> list[str]:
    """Run ``calls`` at once (a barrier before each); each one's outcome: "won" or the error code."""
    barrier, outcomes = threading.Barrier(len(calls)), [""] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            calls[i]()
            outcomes[i] = "won"
        except ClientError as err:
            outcomes[i] = err.response["Error"]["Code"]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_racing_conditional_puts_through_two_gateways_exactly_one_wins_every_time(gateways):
    """Injects two conditional PUTs of one key racing through two server processes, 20 rounds each of If-None-Match
    and If-Match; checks exactly one wins each round and the object holds the winner's bytes."""
    one, two = gateways
    one.create_bucket(Bucket="race")
    for round_ in range(ROUNDS):
        key, bodies = f"k{round_}", [os.urandom(50_000), os.urandom(50_000)]
        outcomes = _race([lambda c=c, b=b: c.put_object(Bucket="race", Key=key, Body=b, IfNoneMatch="*")
                          for c, b in zip(gateways, bodies)])
        assert sorted(outcomes) == ["PreconditionFailed", "won"], (round_, outcomes)
        assert two.get_object(Bucket="race", Key=key)["Body"].read() == bodies[outcomes.index("won")]
        etag = one.head_object(Bucket="race", Key=key)["ETag"]
        outcomes = _race([lambda c=c, b=b: c.put_object(Bucket="race", Key=key, Body=b[:1000], IfMatch=etag)
                          for c, b in zip(gateways, bodies)])
        assert sorted(outcomes) == ["PreconditionFailed", "won"], (round_, outcomes)


def test_a_writer_paused_under_its_turn_past_the_margin_sends_no_head_write(cql, monkeypatch):
    """Injects a conditional write's pause between taking its key's turn and its head write (a sleep in its
    ``before_commit``, right after the take, as a GC pause, a stopped process or a slow retry would be), past the
    turn's working time: the TTL shortened to 3 s, the margin to 1 s. Checks that the head write is refused with
    SlowDown and nothing is committed, and that a second gateway's take of the key's turn applies once the TTL
    has run out, while the first still holds it: the refused write could have landed after that gateway's check.
    Without the turn's fence the paused write is committed."""
    monkeypatch.setattr(conditions, "SAFETY", replace(SAFETY, turn_ttl_s=3, turn_margin_s=1))
    st, store, key = Statements.for_session(cql), Store(cql), "fenced/turn.bin"
    with ConditionTurns(cql, st).turn(key) as turn:
        def take_then_pause() -> None:
            turn.take()
            time.sleep(2.2)

        with pytest.raises(S3Error) as refused:
            store.put(io.BytesIO(os.urandom(100_000)), key, before_commit=take_then_pause, head_fence=turn.fence)
        assert refused.value.code == "SlowDown"
        with pytest.raises(NotFoundError):
            store.stat(key)
        with ConditionTurns(cql, st).turn(key) as second:
            second.take()  # SlowDown unless it applies (within WAIT_S): once the first turn's row has expired
    with ConditionTurns(cql, st).turn(key) as prompt:  # a write sent in time is not refused
        store.put(io.BytesIO(b"in time"), key, before_commit=prompt.take, head_fence=prompt.fence)
    assert store.stat(key).size == len(b"in time")
