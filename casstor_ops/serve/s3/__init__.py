"""The S3 face of ``casstor serve`` (``--s3``): the S3 REST API, path-style, on the same engine as the plain server.

Vocabulary (besides :mod:`casstor_ops.serve`'s):

* **bucket**: a top-level directory of the store, recorded in ``buckets``
  (its creation time, versioning state and **owner**, the access key that
  created it: no other user may touch it); bucket ``b``'s object
  ``k`` is the file ID ``b/k``, so ``casstor ls b/`` lists it (:mod:`.buckets`).
* **object**: a file of a bucket, with the S3 attributes kept in its version
  row: ``etag`` (the MD5 hex of its bytes), ``content_type``, ``user_meta``
  (``x-amz-meta-*``), ``http_headers`` (Cache-Control, Expires, ...) (:mod:`.objects`).
* **signature**: AWS Signature Version 4, in the ``Authorization`` header or a
  presigned URL (:mod:`.sigv4`); an aws-chunked body's chunk signatures and
  trailer (:mod:`.chunked`); the body's digests (:mod:`.checksums`); a small
  (configuration or list) body checked against them before it is parsed
  (:mod:`.request_body`).
* **credentials**: access key -> secret key, from an aws CLI credentials
  file only its owner may read (:mod:`.credentials`).
* **error**: an S3 XML error document with S3's code and status (:mod:`.errors`);
  responses are S3's XML (:mod:`.xml`).

Modules: :mod:`.app` (the dispatcher: authentication, bucket or object, the
operation), :mod:`.buckets`, :mod:`.objects`, :mod:`.listing` (ListObjects v1
and v2 on the directory index), :mod:`.multipart` (multipart uploads, parts
as hidden files), :mod:`.versions` (versioning on the history), :mod:`.acl`
(owner-only ACLs), :mod:`.conditions` (conditional writes atomic across
gateways), :mod:`.post_object` (browser form uploads signed by a policy,
parsed by :mod:`.form`), :mod:`.cors` (a bucket's CORS rules and the
preflight), and the ones above.

Example::

    $ casstor serve --s3 --port 9000 --s3-credentials ~/.casstor-s3 &
    $ aws --endpoint-url http://127.0.0.1:9000 s3 mb s3://photos
    $ aws --endpoint-url http://127.0.0.1:9000 s3 cp a.jpg s3://photos/2024/a.jpg
"""
