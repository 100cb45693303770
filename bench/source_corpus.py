"""A versioned source-tree corpus: consecutive releases of one large project, each an uncompressed tar.

The releases are the project's source distributions on PyPI (the one
package index these machines reach), fetched once into a cache directory
and un-gzipped: consecutive releases share most files, so the tars share
most of their blocks, as successive backups of a source tree do.

Example::

    >>> tars = release_tars(Path("~/.cache/casstor/corpus").expanduser(), "Django", ["5.0.1", "5.0.2"])  # doctest: +SKIP
    >>> [t.name for t in tars]                                                                            # doctest: +SKIP
    ['Django-5.0.1.tar', 'Django-5.0.2.tar']

Failures: a release without an sdist, an unreachable index or a download
that does not match PyPI's SHA-256 raise
:class:`~casstor_ops.errors.CasstorError` (one line); a partial download is
never left in the cache.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

from casstor_ops.errors import CasstorError

INDEX = "https://pypi.org/pypi"
TIMEOUT_S = 120


def _sdist(project: str, version: str) -> dict:
    name = re.sub(r"[-_.]+", "-", project).lower()  # PEP 503's normal form: the index may match no other
    url = f"{INDEX}/{urllib.parse.quote(name)}/json"  # the project's page: a mirror may serve no per-release page
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer:
            releases = json.load(answer)["releases"]
    except OSError as err:
        raise CasstorError(f"cannot read {url}: {err}") from None
    for item in releases.get(version, []):
        if item["packagetype"] == "sdist" and item["filename"].endswith(".tar.gz"):
            return {**item, "url": urllib.parse.urljoin(url, item["url"])}
    raise CasstorError(f"{project} {version} has no .tar.gz source distribution on PyPI")


def _fetch_tar(project: str, version: str, dest: Path) -> None:
    """Download the sdist, check its SHA-256, write it un-gzipped to ``dest`` (atomically)."""
    sdist = _sdist(project, version)
    partial = dest.with_suffix(".partial")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(sdist["url"], timeout=TIMEOUT_S) as answer, open(partial, "wb") as packed:
            while chunk := answer.read(1 << 20):
                digest.update(chunk)
                packed.write(chunk)
        if digest.hexdigest() != sdist["digests"]["sha256"]:
            raise CasstorError(f"{sdist['filename']}: SHA-256 does not match PyPI's")
        with gzip.open(partial, "rb") as src, open(dest.with_suffix(".untar"), "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        dest.with_suffix(".untar").replace(dest)
    except OSError as err:
        raise CasstorError(f"cannot fetch {sdist['filename']}: {err}") from None
    finally:
        partial.unlink(missing_ok=True)
        dest.with_suffix(".untar").unlink(missing_ok=True)


def release_tars(cache: Path, project: str, versions: list[str]) -> list[Path]:
    """The uncompressed tars of ``project``'s ``versions``, fetched into ``cache`` when not there yet."""
    cache.mkdir(parents=True, exist_ok=True)
    tars = []
    for version in versions:
        tar = cache / f"{project}-{version}.tar"
        if not tar.exists():
            _fetch_tar(project, version, tar)
        tars.append(tar)
    return tars
