"""The HTTP face of the store (``casstor serve``): PUT, GET, HEAD and DELETE of one file per URL.

Layer: above :mod:`casstor_ops.store` (it serves a :class:`~casstor_ops.store.api.Store`),
below :mod:`casstor_ops.cli` (``cmd_serve`` only parses arguments); it imports
neither Spark, the lab nor the ops jobs.

Vocabulary (besides the store's: block, head, lease, window):

* **key**: the URL path after the first ``/``, percent-decoded as UTF-8; it
  is the file ID, as ``casstor store``/``restore`` take it (``/a%2Fb`` and
  ``/a/b`` both name ``a/b``). A key is only ever a Cassandra partition key,
  never a local path (:mod:`.keys`).
* **body**: a request's or response's content, streamed between the event
  loop and a worker thread that runs the blocking store call (:mod:`.streams`).
* **shared lease**: one writer lease used by every PUT and DELETE of the
  server for a few seconds, then renewed, so a write costs no lease of its own
  and an offline reclaim waits at most that long plus the longest write
  (:mod:`.shared_lease`).
* **head lock**: a server process's lock on a key, held from a PUT's last
  precondition check to its head write (:mod:`.head_locks`); across
  processes and hosts an S3 conditional write takes the key's **turn**
  instead, a lightweight transaction (:mod:`.s3.conditions`).
* **validators**: ETag (the file hash) and Last-Modified (the head's commit
  time), and the conditional and range requests they answer (:mod:`.validators`,
  :mod:`.ranges`).
* **status**: the HTTP status each store error becomes (:mod:`.status`).

Modules: :mod:`.app` (the request dispatcher), :mod:`.reads` (GET and HEAD),
:mod:`.writes` (PUT and DELETE), :mod:`.bridge` (waiting for the store on the
event loop), :mod:`.policy` (what requests are accepted), :mod:`.server` (socket, uvicorn,
start and stop), :mod:`.auth` (the bearer token), :mod:`.process` (the server
as a child process, for tests and benchmarks).

Example::

    $ casstor serve --port 8080 &
    $ curl -T photo.jpg http://127.0.0.1:8080/photos/2024/photo.jpg
    $ curl -o copy.jpg http://127.0.0.1:8080/photos/2024/photo.jpg
"""
