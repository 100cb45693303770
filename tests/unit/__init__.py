"""Unit tests: pure logic, no Cassandra node and no Spark (fakes of the request queue or the driver session; none of the session fixtures)."""
