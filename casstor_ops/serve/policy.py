"""What requests a server accepts: :class:`Policy`, from ``casstor serve``'s options.

``--token-file`` (the bearer token), ``--read-only``, and a PUT's body
limits: ``--max-body``, ``--require-length``, ``--body-timeout``. The
dispatcher (:mod:`.app`) applies the first two before the key is decoded,
:mod:`.writes` the others before and while a body is read.

Example::

    >>> Policy(read_only=True).max_body is None
    True

Failures: none here; what a refused request is answered is in :mod:`.status`.
"""

from __future__ import annotations

from dataclasses import dataclass

from casstor_ops.serve.auth import Token

# Here, with the policy, not with the streams they bound: `casstor --help` and every command but serve import
# this module for the options' defaults, and the streams' asyncio cost them ~18 ms of their start-up.
HEADER_TIMEOUT_S = 30.0  # a request's line and headers (serve.deadlines): a few hundred bytes
BODY_TIMEOUT_S = 3600.0  # a whole body's deadline: 1 GB takes 10 s at 100 MB/s, a trickle at most an hour


@dataclass(frozen=True)
class Policy:
    """What requests the server accepts: the token (None: none needed), read-only, the PUT body limits."""

    token: Token | None = None
    read_only: bool = False
    max_body: int | None = None       # bytes; None: no limit
    require_length: bool = False      # 411 for a PUT without Content-Length
    body_timeout_s: float = BODY_TIMEOUT_S  # a PUT's whole body arrives within this, or 408
