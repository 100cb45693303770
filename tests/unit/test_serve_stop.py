"""``casstor serve``'s stop on SIGTERM: uvicorn on a trivial ASGI app (no node), in a child interpreter, so the
signal handlers never touch the test process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SERVER = textwrap.dedent("""
    import os, signal, socket, sys
    import uvicorn
    from casstor_ops.serve.server import run_until_stopped

    async def app(scope, receive, send):
        pass

    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))

    def ready():  # the 'listening on' line, then at once the service manager's SIGTERM
        print("listening", flush=True)
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))

    run_until_stopped(server, [sock], ready)
    print("stopped: the lease is given up here", flush=True)
""")


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_signal_right_after_listening_stops_the_server_cleanly(name: str) -> None:
    """Injects SIGTERM (or Ctrl-C's SIGINT) in the ``ready`` callback, just after the ``listening`` line and before
    uvicorn has installed its own handlers; checks the server stops and returns to its caller (exit 0), neither
    killed by the signal (143) nor running on with the signal lost (the timeout)."""
    done = subprocess.run([sys.executable, "-c", SERVER, name], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "listening\nstopped: the lease is given up here\n"), done.stderr
