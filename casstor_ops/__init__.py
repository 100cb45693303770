"""casstor: a deduplicating file store on Apache Cassandra (see :mod:`casstor_ops.store.api`)."""

from casstor_ops.cluster.driver_extras import skip_driver_extras
from casstor_ops.spark.worker_imports import reread_changed_archives_only

# Before any module of the package imports the driver: it then loads without NumPy and Twisted.
skip_driver_extras()
# In a Spark Python worker (a no-op elsewhere): its later tasks no longer re-read pyspark's zips and jar.
reread_changed_archives_only()

from casstor_ops.store.records import FileInfo, RestoreResult, StoreResult, StoreStats  # noqa: E402 (after the hook)


def __getattr__(name: str):
    # Store pulls in the driver; import it lazily so `import casstor_ops` stays light.
    if name == "Store":
        from casstor_ops.store.api import Store

        return Store
    raise AttributeError(name)


__all__ = ["Store", "StoreResult", "RestoreResult", "FileInfo", "StoreStats"]
