"""Load the Cassandra driver without the optional parts casstor never uses.

At import, ``cassandra.cluster`` tries the Twisted reactor (which imports
``deprecated`` and ``wrapt`` before it finds that Twisted is absent) and
``cassandra.cython_deps`` imports NumPy, for a result parser that only a
``NumpyProtocolHandler`` uses. casstor uses the libev reactor and tuple rows,
yet a one-file ``casstor`` command paid for both at every start: together
half of the driver's import time (``python -X importtime``; measured in
``docs/benchmarks.md``). :func:`skip_driver_extras` installs an import hook
that refuses them as if they were not installed; the driver expects that
(each import sits in ``try/except ImportError``). The Twisted reactor module
is refused to everyone (it is the driver's own, and casstor never uses it;
``cassandra.cluster`` is compiled, so who imports it cannot be told); NumPy
only to ``cassandra.cython_deps``: any other module importing it (Spark,
pandas, the lab's corpora) gets it as usual, and a NumPy already imported is
used by the driver as before.

Example::

    >>> skip_driver_extras()
    >>> import cassandra.cython_deps                     # doctest: +SKIP
    >>> cassandra.cython_deps.HAVE_NUMPY                 # doctest: +SKIP
    False

Failures: none. A driver already imported is left as it is; the hook is
installed once however often this is called.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

TWISTED_REACTOR = "cassandra.io.twistedreactor"
NUMPY, NUMPY_IMPORTER = "numpy", "cassandra.cython_deps"


def _importer() -> str | None:
    """The name of the module whose code runs the import being resolved (past importlib's own frames)."""
    frame = sys._getframe(2)  # _importer <- find_spec <- importlib
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame = frame.f_back
    return frame.f_globals.get("__name__") if frame is not None else None


class _SkipDriverExtras(MetaPathFinder):
    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name == TWISTED_REACTOR or (name == NUMPY and _importer() == NUMPY_IMPORTER):
            raise ModuleNotFoundError(f"{name} is not loaded for the Cassandra driver: casstor does not use it",
                                      name=name)
        return None  # not ours to refuse: the next finder resolves it


def skip_driver_extras() -> None:
    """Install the hook (first on ``sys.meta_path``, once)."""
    if not any(isinstance(finder, _SkipDriverExtras) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SkipDriverExtras())
