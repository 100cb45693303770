"""The ``casstor`` command and the argument parser every command, job and script uses.

:mod:`.main` dispatches to the ``cmd_*`` modules (thin: parse, call the
library, print); :mod:`.args` has :class:`~.args.OneLineParser`, so a usage
mistake is one line and exit 2 everywhere. Errors become one line and an
exit code in one place, :func:`casstor_ops.errors.run_reporting_errors`.

This is the top layer: it may import every other subpackage; none imports it.

Example::

    $ casstor store ./photo.jpg photos/photo.jpg --json
"""
