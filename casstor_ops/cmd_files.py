"""``casstor store | restore | rm | ls | stat | stats`` (issue 3)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Filled in by the store/restore work."""
