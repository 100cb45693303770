"""``make experiments``: run every notebook headless, in order, and keep the executed copies.

Runs each notebook ``notebooks/01_*.ipynb`` .. ``05_*.ipynb`` that exists, in
order (01 ingests a sample tree that 02 reports on), with papermill and
the parameters ``smoke`` (full sizes unless ``--smoke``) and ``plots_dir``,
from the project root, against casstor's cluster (the local node, started
if needed, or ``CASSTOR_NODES``); notebook 03 also starts and stops local
clusters of its own for its node-count section. Executed copies, figures
and CSVs go to ``plots/`` (``--out`` to change), raw cassandra-stress logs
to ``plots/stress/``.

Example::

    $ .venv/bin/python -m casstor_ops.cli.experiments            # everything at full size: about an hour on 2 cores
    $ .venv/bin/python -m casstor_ops.cli.experiments --smoke --only 01 03

A notebook that fails stops the run: ``casstor: notebook 03_...: <the
cell's error>`` on stderr, exit 1; its executed copy (with the traceback)
stays in the output directory.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from casstor_ops.cluster import paths as layout
from casstor_ops.cli.args import OneLineParser
from casstor_ops.errors import CasstorError, run_reporting_errors

NOTEBOOKS = "0[1-5]_*.ipynb"  # the numbered notebooks; 0N_ orders them


def notebooks_to_run(only: list[str] | None = None, folder: Path | None = None) -> list[Path]:
    """Every notebook 01-05 present in ``folder`` (default ``notebooks/``) in order, or those whose name starts
    with one of ``only``."""
    present = sorted((folder or layout.project_root() / "notebooks").glob(NOTEBOOKS))
    chosen = [path for path in present if not only or any(path.name.startswith(o) for o in only)]
    if only and not chosen:
        raise CasstorError(f"--only {' '.join(only)}: no such notebook "
                           f"(known: {', '.join(path.name for path in present)})")
    return chosen


def run_notebook(path: Path, out_dir: Path, smoke: bool) -> Path:
    """Execute one notebook with papermill (working directory: the project root)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / path.name
    try:
        papermill.execute_notebook(str(path), str(executed), parameters={"smoke": smoke, "plots_dir": str(out_dir)},
                                   cwd=str(layout.project_root()), kernel_name="python3", progress_bar=False)
    except PapermillExecutionError as err:
        raise CasstorError(f"notebook {path.stem}: {err.ename}: {err.evalue} (executed copy: {executed})") from None
    return executed


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m casstor_ops.cli.experiments", description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="small runs (a few minutes), not the full study")
    parser.add_argument("--only", nargs="+", metavar="PREFIX", help="notebooks whose name starts with PREFIX (e.g. 03)")
    parser.add_argument("--out", type=Path, default=layout.project_root() / "plots",
                        help="directory of executed notebooks, figures and CSVs (default: plots/)")
    args = parser.parse_args(argv)

    def run_all() -> int:
        for path in notebooks_to_run(args.only):
            started = time.monotonic()
            print(f"experiments: running {path.name} ({'smoke' if args.smoke else 'full'})", file=sys.stderr)
            executed = run_notebook(path, args.out.resolve(), args.smoke)
            print(f"experiments: {path.name} done in {time.monotonic() - started:.0f} s -> {executed}",
                  file=sys.stderr)
        return 0

    return run_reporting_errors(run_all)


if __name__ == "__main__":
    sys.exit(main())
