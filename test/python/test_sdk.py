#!/usr/bin/env python3
"""Conformance test of Partita against the Azure Cosmos DB Python SDK v3.

Drives a freshly started Partita server with Debian's python3-azure-cosmos
(3.1.1, ``azure.cosmos.cosmos_client``): CRUD, a paged read feed, cross-
partition ORDER BY, COUNT and TOP (the v3 SDK sends the query as is, and on
the gateway's 400/1004 refusal runs the query plan it carries range by
range), a stored procedure, and the change feed with its continuation.

Run: PARTITA_BIN=/path/to/partita /usr/bin/python3 test/python/test_sdk.py

The server is started on a free loopback port with a temporary data
directory, the client trusts the certificate the server generated
(verification stays on), and the server is stopped and its data removed
when the suite ends, whatever the outcome.
"""

import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

try:
    import azure.cosmos.cosmos_client as cosmos_client
    import azure.cosmos.documents as documents
    import azure.cosmos.errors as errors
except ImportError as exc:
    sys.exit(
        "test/python: the Azure Cosmos DB Python SDK v3 is not importable (%s).\n"
        "Install Debian's package: apt-get install python3-azure-cosmos\n"
        "and run the test with the system interpreter, /usr/bin/python3." % exc
    )

EMULATOR_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
READY_MARKER = "is serving the Cosmos DB API at https://"
READY_TIMEOUT = 20
STOP_TIMEOUT = 10


def free_port():
    """Returns a loopback port that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Partita:
    """A `partita serve` process on a free port with a temporary data directory."""

    def __init__(self, extra_args=("--rate-limit=off",)):
        self.bin = os.environ.get("PARTITA_BIN")
        if not self.bin:
            raise RuntimeError(
                "PARTITA_BIN is not set: build the server (make build) and run "
                "PARTITA_BIN=$PWD/bin/partita /usr/bin/python3 test/python/test_sdk.py"
            )
        self.data = tempfile.mkdtemp(prefix="partita-python-")
        self.proc = None
        self.stdout = []
        try:
            self._start(extra_args)
        except BaseException:
            self.stop()
            raise

    def _start(self, extra_args):
        port = free_port()
        self.endpoint = "https://127.0.0.1:%d/" % port
        self.proc = subprocess.Popen(
            [self.bin, "serve", "--addr", "127.0.0.1:%d" % port, "--data", self.data, *extra_args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines = queue.Queue()

        def pump():
            for line in self.proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=READY_TIMEOUT)
            except queue.Empty:
                raise RuntimeError("partita did not print its ready line within %ds:\n%s" % (READY_TIMEOUT, "".join(self.stdout)))
            if line is None:
                raise RuntimeError("partita exited before it was ready (%s):\n%s" % (self.proc.wait(), "".join(self.stdout)))
            self.stdout.append(line)
            if READY_MARKER in line:
                if self.endpoint not in line:
                    raise RuntimeError("ready line does not name %s: %s" % (self.endpoint, line))
                return

    def client(self):
        """A client that trusts the server's certificate."""
        policy = documents.ConnectionPolicy()
        policy.SSLConfiguration = documents.SSLConfiguration()
        policy.SSLConfiguration.SSLCaCerts = os.path.join(self.data, "tls", "cert.pem")
        return cosmos_client.CosmosClient(self.endpoint, {"masterKey": EMULATOR_KEY}, policy)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)


def status_of(fn):
    """Runs fn, which must fail with an HTTP error; returns its status code."""
    try:
        fn()
    except errors.HTTPFailure as e:
        return e.status_code
    raise AssertionError("expected the operation to fail, but it succeeded")


class PythonSDKTest(unittest.TestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        cls.server = Partita()
        cls.client = cls.server.client()
        cls.db = cls.client.CreateDatabase({"id": "pyDb"})
        cls.db_link = "dbs/pyDb"

    @classmethod
    def tearDownClass(cls):
        if cls.server is not None:
            cls.server.stop()

    def container(self, cid, throughput=None):
        options = {"offerThroughput": throughput} if throughput else None
        self.client.CreateContainer(self.db_link, {"id": cid, "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}, options)
        return self.db_link + "/colls/" + cid

    def test_crud(self):
        coll = self.container("crud")
        created = self.client.CreateItem(coll, {"id": "a", "pk": "p", "v": 1})
        self.assertEqual(created["id"], "a")
        self.assertTrue(created["_etag"] and created["_rid"] and created["_ts"])
        headers = self.client.last_response_headers
        self.assertIn("x-ms-session-token", headers)  # read case-sensitively: the SDK keeps a plain dict
        self.assertGreater(float(headers["x-ms-request-charge"]), 0)
        self.assertEqual(headers["etag"], created["_etag"])

        self.assertEqual(status_of(lambda: self.client.CreateItem(coll, {"id": "a", "pk": "p"})), 409)
        read = self.client.ReadItem(coll + "/docs/a", {"partitionKey": "p"})
        self.assertEqual(read["v"], 1)

        replaced = self.client.ReplaceItem(coll + "/docs/a", {"id": "a", "pk": "p", "v": 2}, {"partitionKey": "p"})
        self.assertEqual(replaced["v"], 2)
        self.assertNotEqual(replaced["_etag"], created["_etag"])
        stale = {"accessCondition": {"type": "IfMatch", "condition": created["_etag"]}, "partitionKey": "p"}
        self.assertEqual(status_of(lambda: self.client.ReplaceItem(coll + "/docs/a", {"id": "a", "pk": "p"}, stale)), 412)

        upserted = self.client.UpsertItem(coll, {"id": "b", "pk": "q", "v": 3})
        self.assertEqual(upserted["v"], 3)
        self.client.UpsertItem(coll, {"id": "b", "pk": "q", "v": 4})
        self.assertEqual(self.client.ReadItem(coll + "/docs/b", {"partitionKey": "q"})["v"], 4)

        self.client.ReadContainer(coll, {"populateQuotaInfo": True})
        usage = dict(kv.split("=") for kv in self.client.last_response_headers["x-ms-resource-usage"].split(";") if kv)
        self.assertEqual(usage["documentsCount"], "2")
        self.assertEqual(self.client.last_response_headers["x-ms-documentdb-collection-index-transformation-progress"], "100")

        self.client.DeleteItem(coll + "/docs/a", {"partitionKey": "p"})
        self.assertEqual(status_of(lambda: self.client.ReadItem(coll + "/docs/a", {"partitionKey": "p"})), 404)
        self.assertEqual(status_of(lambda: self.client.ReadItem(coll + "/docs/b", {"partitionKey": "wrong"})), 404)

    def test_read_feed_paged(self):
        coll = self.container("feed")
        for i in range(6):
            self.client.CreateItem(coll, {"id": "f%d" % i, "pk": "p%d" % (i % 2)})
        it = self.client.ReadItems(coll, {"maxItemCount": 2})
        pages = []
        while True:
            page = it.fetch_next_block()
            if not page:
                break
            pages.append(page)
        self.assertEqual([len(p) for p in pages], [2, 2, 2])
        self.assertEqual(sorted(d["id"] for p in pages for d in p), ["f%d" % i for i in range(6)])
        # Iterating follows the continuations too.
        self.assertEqual(len(list(self.client.ReadItems(coll, {"maxItemCount": 2}))), 6)

    def test_cross_partition_queries(self):
        coll = self.container("cross", throughput=24000)  # four physical partitions
        ranges = list(self.client._ReadPartitionKeyRanges(coll))
        self.assertGreater(len(ranges), 1)
        n = 40
        for i in range(n):
            self.client.CreateItem(coll, {"id": "x%02d" % i, "pk": "k%d" % (i % 13), "n": (i * 7) % n, "s": "v%d" % (i % 5)})
        cross = {"enableCrossPartitionQuery": True}

        def query(q, **options):
            return list(self.client.QueryItems(coll, q, dict(cross, **options)))

        docs = query("SELECT * FROM c ORDER BY c.n DESC", maxItemCount=7)
        self.assertEqual([d["n"] for d in docs], list(range(n - 1, -1, -1)))
        self.assertTrue(all("id" in d and "pk" in d for d in docs), "ORDER BY returns the documents")

        self.assertEqual(query("SELECT VALUE COUNT(1) FROM c"), [n])
        self.assertEqual(query("SELECT VALUE COUNT(1) FROM c WHERE c.s = 'v1'"), [n // 5])
        self.assertEqual(query("SELECT VALUE MAX(c.n) FROM c"), [n - 1])

        top = query("SELECT TOP 5 c.id, c.n FROM c ORDER BY c.n")
        self.assertEqual([d["n"] for d in top], [0, 1, 2, 3, 4])
        self.assertEqual(len(query("SELECT TOP 3 * FROM c")), 3)

        params = {"query": "SELECT * FROM c WHERE c.n >= @min ORDER BY c.id", "parameters": [{"name": "@min", "value": 30}]}
        self.assertEqual([d["id"] for d in query(params)], sorted(d["id"] for d in docs if d["n"] >= 30))

        # The v3 SDK merges only ORDER BY, TOP and VALUE aggregates from a
        # plan: queries needing more get a clear 400, not wrong results.
        for q in ["SELECT DISTINCT VALUE c.s FROM c", "SELECT c.s, COUNT(1) AS n FROM c GROUP BY c.s",
                  "SELECT * FROM c ORDER BY c.n OFFSET 2 LIMIT 3", "SELECT COUNT(1) AS n FROM c"]:
            with self.assertRaises(errors.HTTPFailure, msg=q) as cm:
                query(q)
            self.assertEqual(cm.exception.status_code, 400, q)
            self.assertIn("which the calling client does not support", str(cm.exception), q)
        # A filter without merging is served by the gateway directly, paged.
        self.assertEqual(len(query("SELECT * FROM c WHERE c.s = 'v2'", maxItemCount=3)), n // 5)
        # Without enableCrossPartitionQuery the service refuses a fan-out.
        self.assertEqual(status_of(lambda: list(self.client.QueryItems(coll, "SELECT * FROM c"))), 400)
        # One logical partition: no fan-out needed.
        one = list(self.client.QueryItems(coll, "SELECT * FROM c ORDER BY c.n", {"partitionKey": "k3"}))
        self.assertEqual([d["n"] for d in one], sorted(d["n"] for d in docs if d["pk"] == "k3"))

    def test_stored_procedure(self):
        coll = self.container("scripts")
        body = """function addItem(id, v) {
            var c = getContext().getCollection();
            var ok = c.createDocument(c.getSelfLink(), {id: id, pk: "p", v: v}, function (err, doc) {
                if (err) throw err;
                getContext().getResponse().setBody({created: doc.id, twice: v * 2});
            });
            if (!ok) throw new Error("not accepted");
        }"""
        sproc = self.client.CreateStoredProcedure(coll, {"id": "addItem", "body": body})
        self.assertEqual(sproc["id"], "addItem")
        result = self.client.ExecuteStoredProcedure(coll + "/sprocs/addItem", ["s1", 21], {"partitionKey": "p"})
        self.assertEqual(result, {"created": "s1", "twice": 42})
        self.assertEqual(self.client.ReadItem(coll + "/docs/s1", {"partitionKey": "p"})["v"], 21)
        # A script that throws rolls back and fails the call.
        self.assertEqual(status_of(lambda: self.client.ExecuteStoredProcedure(coll + "/sprocs/addItem", ["s1", 1], {"partitionKey": "p"})), 409)

    def test_change_feed(self):
        coll = self.container("changes", throughput=12000)  # two physical partitions
        ranges = [r["id"] for r in self.client._ReadPartitionKeyRanges(coll)]
        self.assertGreater(len(ranges), 1)
        for i in range(10):
            self.client.CreateItem(coll, {"id": "c%d" % i, "pk": "k%d" % i, "v": 0})

        def read(range_id, continuation=None):
            """Reads one range's feed to its end in pages of 3; returns ids and the continuation."""
            options = {"partitionKeyRangeId": range_id, "maxItemCount": 3}
            if continuation:
                options["continuation"] = continuation
            it = self.client.QueryItemsChangeFeed(coll, options)
            ids = [d["id"] for d in it]
            return ids, self.client.last_response_headers["etag"]

        seen, tokens = [], {}
        for r in ranges:
            ids, tokens[r] = read(r)
            self.assertEqual(self.client.last_response_headers["x-ms-documentdb-partitionkeyrangeid"], r)
            seen += ids
        self.assertEqual(sorted(seen), sorted("c%d" % i for i in range(10)))

        self.client.UpsertItem(coll, {"id": "c3", "pk": "k3", "v": 1})
        self.client.CreateItem(coll, {"id": "new", "pk": "k3", "v": 0})
        later = []
        for r in ranges:
            ids, _ = read(r, tokens[r])
            later += ids
        self.assertEqual(later, ["c3", "new"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
