"""Progress bars for long transfers: on a terminal only, never in pipes or with ``--quiet``.

Example::

    >>> with progress_bar("store", total=10, enabled=False) as update:
    ...     update is None        # disabled (or stderr is not a terminal): callers skip it
    True
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

ProgressCallback = Callable[[int], object]
"""Called with the number of bytes just read (store) or written (restore); ``tqdm.update`` fits."""


@contextlib.contextmanager
def progress_bar(label: str, total: int | None, enabled: bool = True) -> Iterator[ProgressCallback | None]:
    """Yield an ``update(n_bytes)`` callable (bytes, MB/s, ETA on stderr), or None when disabled/not a TTY."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=label, unit="B", unit_scale=True, unit_divisor=1000, file=sys.stderr,
              leave=False, dynamic_ncols=True) as bar:
        yield bar.update
