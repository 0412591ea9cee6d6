#!/usr/bin/env python3
"""Conformance test of Partita against the Azure Cosmos DB Python SDK v3.

Drives a freshly started Partita server with Debian's python3-azure-cosmos
(3.1.1, ``azure.cosmos.cosmos_client``): CRUD, a paged read feed, cross-
partition ORDER BY, COUNT and TOP (the v3 SDK sends the query as is, and on
the gateway's 400/1004 refusal runs the query plan it carries range by
range), a stored procedure, the change feed with its continuation, and
resources addressed by their _self links (docs/rid-links.md).

Run: PARTITA_BIN=/path/to/partita /usr/bin/python3 test/python/test_sdk.py

The server is started on a free loopback port with a temporary data
directory, the client trusts the certificate the server generated
(verification stays on), and the server is stopped and its data removed
when the suite ends, whatever the outcome. With PARTITA_CLUSTER=1 (make
test-python-cluster) a three-node cluster is started instead and the suite
talks to its node 1 (docs/cluster.md).
"""

import os
import queue
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
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
# A cluster member is ready once a majority of the join list is up and it
# has joined etcd, which takes longer on a loaded machine.
CLUSTER_READY_TIMEOUT = 60
STOP_TIMEOUT = 10

# With PARTITA_CLUSTER=1 the suite runs against node 1 of a three-node
# cluster (make test-python-cluster), as test/node/server.mjs does.
CLUSTER = os.environ.get("PARTITA_CLUSTER") == "1"
CLUSTER_SIZE = 3


def free_port():
    """Returns a loopback port that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stable_ports(n):
    """Returns (api, cluster): n API ports and n cluster ports, all distinct.

    Every cluster port's port+1 (etcd's peer port) is free too. All are below
    the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), so
    that no connection's local port or ":0" listener can take one between the
    choice and the server's bind (stablePort in cmd/partita/cluster_test.go).
    Every port is held until all are chosen.
    """
    lo = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            first = int(f.read().split()[0])
        if first > 12000:
            lo = first
    except (OSError, ValueError, IndexError):
        pass  # Not Linux: keep the common default.
    held = []

    def take(port):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            s.close()
            return False
        held.append(s)
        return True

    api, cluster = [], []
    try:
        tries = 0
        while len(api) < n or len(cluster) < n:
            if tries == 100 * n:
                raise RuntimeError("no free loopback ports below the ephemeral range")
            tries += 1
            port = random.randrange(10000, lo - 1)
            if len(cluster) < n:
                if take(port) and take(port + 1):
                    cluster.append(port)
            elif take(port):
                api.append(port)
    finally:
        for s in held:
            s.close()
    return api, cluster


class Member:
    """One `partita serve` process on 127.0.0.1:port with its data in data."""

    def __init__(self, binary, port, data, args, env=None):
        self.endpoint = "https://127.0.0.1:%d/" % port
        self.data = data
        self.stdout = []
        self._lines = queue.Queue()
        self._eof = False  # whether _lines' final None has been taken
        self.proc = subprocess.Popen(
            [binary, "serve", "--addr", "127.0.0.1:%d" % port, "--data", data, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )

        # Drains the pipe for the process's whole life, so that it never
        # blocks writing its log.
        def pump():
            for line in self.proc.stdout:
                self._lines.put(line)
            self._lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def wait_ready(self, deadline):
        """Waits until the ready line naming this endpoint, or raises at deadline (time.monotonic)."""
        while True:
            try:
                line = self._lines.get(timeout=max(0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError("partita on %s did not print its ready line in time:\n%s" % (self.endpoint, "".join(self.stdout)))
            if line is None:
                self._eof = True
                raise RuntimeError("partita on %s exited before it was ready (%s):\n%s" % (self.endpoint, self.proc.wait(), "".join(self.stdout)))
            self.stdout.append(line)
            if READY_MARKER in line:
                if self.endpoint not in line:
                    raise RuntimeError("ready line does not name %s: %s" % (self.endpoint, line))
                return

    def stop(self):
        """Sends SIGTERM and waits for the exit, escalating to SIGKILL after STOP_TIMEOUT.

        Returns None if the process was running and exited 0 in time, or else
        what went wrong followed by the tail of its log.
        """
        problem = None
        if self.proc.poll() is not None:
            problem = "exited during the run (status %d)" % self.proc.returncode
        else:
            self.proc.send_signal(signal.SIGTERM)
            try:
                if self.proc.wait(STOP_TIMEOUT) != 0:
                    problem = "exited with status %d on SIGTERM" % self.proc.returncode
            except subprocess.TimeoutExpired:
                # SIGQUIT: the Go runtime prints every goroutine's stack and exits.
                problem = "did not stop within %ds of SIGTERM (sent SIGQUIT: its goroutines are in the log)" % STOP_TIMEOUT
                self.proc.send_signal(signal.SIGQUIT)
                try:
                    self.proc.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        if problem is None:
            return None
        while not self._eof:  # the pump ends with None once the pipe closes
            try:
                line = self._lines.get(timeout=STOP_TIMEOUT)
            except queue.Empty:
                break
            if line is None:
                self._eof = True
            else:
                self.stdout.append(line)
        fd, path = tempfile.mkstemp(prefix="partita-python-", suffix=".log")
        with os.fdopen(fd, "w") as f:
            f.writelines(self.stdout)
        return "partita on %s %s; its log is in %s, ending:\n%s" % (self.endpoint, problem, path, "".join(self.stdout[-40:]))


class Partita:
    """A started Partita: one `partita serve` process, or (cluster) three members of one cluster.

    A single server listens on a free port with its data in a temporary
    directory. A cluster's members each have their own data directory, API
    port and cluster port (stable_ports), the same --join list and a fresh
    PARTITA_CLUSTER_SECRET; endpoint and data are node 1's. stop() stops
    every process and removes every directory, whatever state the start
    reached.
    """

    def __init__(self, extra_args=("--rate-limit=off",), cluster=CLUSTER):
        self.bin = os.environ.get("PARTITA_BIN")
        if not self.bin:
            raise RuntimeError(
                "PARTITA_BIN is not set: build the server (make build) and run "
                "PARTITA_BIN=$PWD/bin/partita /usr/bin/python3 test/python/test_sdk.py"
            )
        self.root = tempfile.mkdtemp(prefix="partita-python-")
        self.members = []
        try:
            if cluster:
                self._start_cluster(extra_args)
            else:
                self.members.append(Member(self.bin, free_port(), self.root, extra_args))
                self.members[0].wait_ready(time.monotonic() + READY_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        self.endpoint = self.members[0].endpoint
        self.data = self.members[0].data

    def _start_cluster(self, extra_args):
        api, ports = stable_ports(CLUSTER_SIZE)
        join = ",".join("127.0.0.1:%d" % p for p in ports)
        env = dict(os.environ, PARTITA_CLUSTER_SECRET=secrets.token_hex(16))
        # Every member must start at once: one is ready only when a majority is up.
        for i in range(CLUSTER_SIZE):
            args = [*extra_args, "--cluster-addr", "127.0.0.1:%d" % ports[i], "--join", join]
            self.members.append(Member(self.bin, api[i], os.path.join(self.root, "n%d" % (i + 1)), args, env))
        deadline = time.monotonic() + CLUSTER_READY_TIMEOUT
        failures = []
        for m in self.members:
            try:
                m.wait_ready(deadline)
            except RuntimeError as e:
                failures.append(str(e))
        if failures:
            raise RuntimeError("\n\n".join(failures))

    def client(self):
        """A client of node 1 that trusts the server's certificate."""
        policy = documents.ConnectionPolicy()
        policy.SSLConfiguration = documents.SSLConfiguration()
        policy.SSLConfiguration.SSLCaCerts = os.path.join(self.data, "tls", "cert.pem")
        return cosmos_client.CosmosClient(self.endpoint, {"masterKey": EMULATOR_KEY}, policy)

    def stop(self):
        """Stops every process and removes every directory.

        Returns what went wrong (Member.stop), one string per process that
        died during the run, failed or did not stop in time; empty if none did.
        """
        # One at a time, last first: a member stopping while it leads etcd
        # first hands its leadership to another, which takes etcd's request
        # timeout (7 s) when that one is stopping too.
        problems = [p for p in (m.stop() for m in reversed(self.members)) if p]
        shutil.rmtree(self.root, ignore_errors=True)
        return problems


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
        # A member that crashed, or did not stop cleanly on SIGTERM, fails
        # the suite even if node 1 answered every request.
        if cls.server is not None:
            problems = cls.server.stop()
            if problems:
                raise AssertionError("\n\n".join(problems))

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

        stats = self.client.ReadContainer(coll, {"populatePartitionKeyRangeStatistics": True})["statistics"]
        self.assertEqual(sum(r["documentCount"] for r in stats), 2)
        self.assertEqual(sorted(k["partitionKey"] for r in stats for k in r["partitionKeys"]), [["p"], ["q"]])
        self.assertTrue(all(r["sizeInKB"] >= 1 for r in stats if r["documentCount"]))
        self.assertNotIn("statistics", self.client.ReadContainer(coll))

        self.client.ReadContainer(coll, {"populateQuotaInfo": True})
        usage = dict(kv.split("=") for kv in self.client.last_response_headers["x-ms-resource-usage"].split(";") if kv)
        self.assertEqual(usage["documentsCount"], "2")
        self.assertEqual(self.client.last_response_headers["x-ms-documentdb-collection-index-transformation-progress"], "100")

        self.client.DeleteItem(coll + "/docs/a", {"partitionKey": "p"})
        self.assertEqual(status_of(lambda: self.client.ReadItem(coll + "/docs/a", {"partitionKey": "p"})), 404)
        self.assertEqual(status_of(lambda: self.client.ReadItem(coll + "/docs/b", {"partitionKey": "wrong"})), 404)

    def test_item_permission_by_self(self):
        """An item permission given the item's _self, as the SDK's samples
        do, covers reads of the item by id (403 before) and by _self, and
        no other item."""
        coll = self.container("perm")
        item = self.client.CreateItem(coll, {"id": "r03", "pk": "k3"})
        self.client.CreateItem(coll, {"id": "r04", "pk": "k3"})
        user = self.client.CreateUser(self.db_link, {"id": "bob"})
        perm = self.client.CreatePermission(user["_self"], {"id": "ip3", "permissionMode": "read", "resource": item["_self"]})
        policy = documents.ConnectionPolicy()
        policy.SSLConfiguration = documents.SSLConfiguration()
        policy.SSLConfiguration.SSLCaCerts = os.path.join(self.server.data, "tls", "cert.pem")
        reader = cosmos_client.CosmosClient(self.server.endpoint, {"resourceTokens": {"r03": perm["_token"], "r04": perm["_token"], item["_rid"].lower(): perm["_token"]}}, policy)
        self.assertEqual(reader.ReadItem(coll + "/docs/r03", {"partitionKey": "k3"})["id"], "r03")
        self.assertEqual(reader.ReadItem(item["_self"], {"partitionKey": "k3"})["id"], "r03")
        self.assertEqual(status_of(lambda: reader.ReadItem(coll + "/docs/r04", {"partitionKey": "k3"})), 403)

    def test_self_links(self):
        """Resources addressed by the _self links of their reads, as the v3
        SDK's samples do (client.CreateContainer(db['_self'], ...)): the SDK
        signs such a request over the last _rid, lower cased."""
        db = self.client.CreateDatabase({"id": "pySelf"})
        try:
            coll = self.client.CreateContainer(db["_self"], {"id": "k", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}})
            self.assertEqual(self.client.ReadContainer(coll["_self"])["id"], "k")
            doc = self.client.CreateItem(coll["_self"], {"id": "a", "pk": "p", "v": 1})
            self.assertTrue(doc["_self"].startswith(coll["_self"]), doc["_self"])
            self.assertEqual(self.client.ReadItem(doc["_self"], {"partitionKey": "p"})["v"], 1)
            replaced = self.client.ReplaceItem(doc["_self"], {"id": "a", "pk": "p", "v": 2}, {"partitionKey": "p"})
            self.assertEqual(replaced["v"], 2)
            self.assertEqual(replaced["_rid"], doc["_rid"])
            # The item's _rid in another logical partition names nothing.
            self.assertEqual(status_of(lambda: self.client.ReadItem(doc["_self"], {"partitionKey": "other"})), 404)
            self.client.UpsertItem(coll["_self"], {"id": "b", "pk": "p", "v": 3})
            got = list(self.client.QueryItems(coll["_self"], "SELECT VALUE c.v FROM c ORDER BY c.v", {"partitionKey": "p"}))
            self.assertEqual(got, [2, 3])

            sproc = self.client.CreateStoredProcedure(coll["_self"], {"id": "echo", "body": "function (x) { getContext().getResponse().setBody(x); }"})
            self.assertEqual(self.client.ExecuteStoredProcedure(sproc["_self"], ["hi"], {"partitionKey": "p"}), "hi")
            self.assertEqual(self.client.ReadStoredProcedure(sproc["_self"])["id"], "echo")

            user = self.client.CreateUser(db["_self"], {"id": "u"})
            perm = self.client.CreatePermission(user["_self"], {"id": "read", "permissionMode": "Read", "resource": coll["_self"]})
            self.assertEqual(self.client.ReadPermission(perm["_self"])["id"], "read")
            self.assertEqual(self.client.ReadUser(user["_self"])["id"], "u")

            self.client.DeleteItem(doc["_self"], {"partitionKey": "p"})
            self.assertEqual(status_of(lambda: self.client.ReadItem(doc["_self"], {"partitionKey": "p"})), 404)
            self.client.DeleteContainer(coll["_self"])
            self.assertEqual(status_of(lambda: self.client.ReadContainer(coll["_self"])), 404)
        finally:
            self.client.DeleteDatabase(db["_self"])
        self.assertEqual(status_of(lambda: self.client.ReadDatabase(db["_self"])), 404)

    def test_legacy_offer_type(self):
        """The retired S1/S2/S3 performance levels (options['offerType']) are
        refused with 400, not ignored."""
        spec = {"id": "s1", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}
        self.assertEqual(status_of(lambda: self.client.CreateContainer(self.db_link, spec, {"offerType": "S1"})), 400)
        self.assertEqual(status_of(lambda: self.client.ReadContainer(self.db_link + "/colls/s1")), 404)

    def test_attachment_media(self):
        """Attachment media (ReadMedia, UpdateMedia), which Partita does not
        support, are refused with a clear 400; the SDK's signature over the
        attachment id it derives from the media id got 401 "wrong key"."""
        import io
        media = "media/AAAAAQAAABsAAAAAAAAAAQ=="
        self.assertEqual(status_of(lambda: self.client.ReadMedia(media)), 400)
        self.assertEqual(status_of(lambda: self.client.UpdateMedia(media, io.BytesIO(b"x"), {"contentType": "text/plain"})), 400)

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

    def test_non_ascii_measured_as_utf8(self):
        """The SDK escapes every non-ASCII character (json.dumps): 400,000 CJK
        characters, 1.2 MB as UTF-8 and 2.4 MB escaped, are stored and
        measured as UTF-8, within the 2 MB limit (refused as 2.4 MB before)."""
        coll = self.container("cjk")
        text = "\u65e5" * 400000
        self.client.CreateItem(coll, {"id": "cjk", "pk": "p", "t": text})
        got = self.client.ReadItem(coll + "/docs/cjk", {"partitionKey": "p"})
        self.assertEqual(got["t"], text)

    def test_databases_paged(self):
        """Databases created within a second, read in pages of one: each once,
        in creation order (ordered by _ts alone they came in another order
        each call, and the pages repeated some and skipped others)."""
        ids = ["pg%d" % i for i in range(5)]
        for i in ids:
            self.client.CreateDatabase({"id": i})
        try:
            for _ in range(3):
                got = [d["id"] for d in self.client.ReadDatabases({"maxItemCount": 1}) if d["id"] in ids]
                self.assertEqual(got, ids)
        finally:
            for i in ids:
                self.client.DeleteDatabase("dbs/" + i)

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
        # TOP over an aggregate's one row: the SDK applied the plan's TOP to
        # each range's partial count and answered one range's (9 of 40).
        self.assertEqual(query("SELECT TOP 1 VALUE COUNT(1) FROM c"), [n])
        # MIN and MAX where some ranges have no value: the SDK merges the
        # legacy partials ({"item": MIN(x)}, {} for none); the newer form's
        # {"item2": ...} broke it (KeyError: 'item').
        self.assertEqual(query("SELECT VALUE MIN(c.n) FROM c WHERE c.n > 36"), [37])
        self.assertEqual(query("SELECT VALUE MAX(c.n) FROM c WHERE c.n < 2"), [1])
        # No range has a value: the v3 SDK's own aggregator answers None.
        self.assertIn(query("SELECT VALUE MIN(c.missing) FROM c"), ([], [None]))

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
        # Upserts of scripts create and then replace (x-ms-documentdb-is-upsert;
        # an upsert of an existing script answered 409 and kept the old body).
        one = "function one() { getContext().getResponse().setBody(1); }"
        two = "function two() { getContext().getResponse().setBody(2); }"
        self.client.UpsertStoredProcedure(coll, {"id": "n", "body": one})
        self.assertEqual(self.client.ExecuteStoredProcedure(coll + "/sprocs/n", [], {"partitionKey": "p"}), 1)
        self.client.UpsertStoredProcedure(coll, {"id": "n", "body": two})
        self.assertEqual(self.client.ExecuteStoredProcedure(coll + "/sprocs/n", [], {"partitionKey": "p"}), 2)
        # A body that does not compile is refused and stores nothing, by an
        # upsert or a replace alike.
        self.assertEqual(status_of(lambda: self.client.UpsertStoredProcedure(coll, {"id": "n", "body": "function ("})), 400)
        self.assertEqual(status_of(lambda: self.client.ReplaceStoredProcedure(coll + "/sprocs/n", {"id": "n", "body": "function ("})), 400)
        self.assertEqual(self.client.ExecuteStoredProcedure(coll + "/sprocs/n", [], {"partitionKey": "p"}), 2)
        self.client.UpsertUserDefinedFunction(coll, {"id": "f", "body": "function f(x) { return x + 1; }"})
        self.client.UpsertUserDefinedFunction(coll, {"id": "f", "body": "function f(x) { return x + 2; }"})
        self.assertEqual(list(self.client.QueryItems(coll, "SELECT VALUE udf.f(1) FROM c WHERE c.id = 's1'", {"partitionKey": "p"})), [3])
        self.client.UpsertTrigger(coll, {"id": "t", "body": "function t() {}", "triggerType": "Pre", "triggerOperation": "All"})
        self.client.UpsertTrigger(coll, {"id": "t", "body": "function t() { }", "triggerType": "Pre", "triggerOperation": "Create"})
        self.assertEqual(self.client.ReadTrigger(coll + "/triggers/t")["triggerOperation"], "Create")

    def test_non_partitioned(self):
        """A container created without a partition key (legal at this SDK's API version) is
        queried without the cross-partition option, and the server answers the whole query."""
        self.client.CreateContainer(self.db_link, {"id": "legacy"})
        coll = self.db_link + "/colls/legacy"
        for i in range(3):
            self.client.CreateItem(coll, {"id": "d%d" % i, "v": i % 2})
        self.assertEqual(self.client.ReadItem(coll + "/docs/d0")["id"], "d0")
        self.assertEqual(sorted(d["id"] for d in self.client.QueryItems(coll, "SELECT * FROM c")), ["d0", "d1", "d2"])
        self.assertEqual(list(self.client.QueryItems(coll, "SELECT VALUE c.id FROM c ORDER BY c.id DESC")), ["d2", "d1", "d0"])
        self.assertEqual(list(self.client.QueryItems(coll, "SELECT DISTINCT VALUE c.v FROM c ORDER BY c.v")), [0, 1])
        self.assertEqual(list(self.client.QueryItems(coll, "SELECT c.v, COUNT(1) AS n FROM c GROUP BY c.v",
                                                     {"enableCrossPartitionQuery": True})), [{"v": 0, "n": 2}, {"v": 1, "n": 1}])

    def test_non_partitioned_throughput(self):
        """A container without a partition key is one physical partition up to 10,000 RU/s,
        Cosmos DB's limit for them, so its plain queries keep working (a hunt found two
        partitions at 10,000 RU/s and every query refused); more is refused."""
        self.client.CreateContainer(self.db_link, {"id": "legacy10k"}, {"offerThroughput": 10000})
        coll = self.db_link + "/colls/legacy10k"
        self.assertEqual(len(list(self.client._ReadPartitionKeyRanges(coll))), 1)
        for i in range(3):
            self.client.CreateItem(coll, {"id": "d%d" % i})
        self.assertEqual(list(self.client.QueryItems(coll, "SELECT VALUE COUNT(1) FROM c")), [3])
        self.assertEqual(status_of(lambda: self.client.CreateContainer(self.db_link, {"id": "legacy20k"}, {"offerThroughput": 20000})), 400)

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
