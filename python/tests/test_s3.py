"""stoker.Shards over s3:// against a real S3 server on loopback.

The server is moto's server mode (PyPI's moto, pinned in requirements/s3-server.txt and
installed by scripts/install-deps.sh into the git-ignored .venvs/s3/ of the checkout): the
S3 REST API in memory, with ListObjectsV2 pagination (continuation tokens), Range
requests and S3's XML errors, in its own process. moto checks neither access keys nor
Signature V4 signatures, so the tests put a small proxy in front of it that verifies
each request's signature with an independent SigV4 implementation (checked below
against AWS's own published example) and refuses an unknown key with S3's 403
InvalidAccessKeyId and a bad signature with 403 SignatureDoesNotMatch; the same proxy
can drop connections mid-object and force small listing pages. The signature libcurl
computes is also checked against AWS's examples in src/io/s3_test.cc.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse
from datetime import datetime, timezone

import numpy as np
import pytest

import stoker
from conftest import skip_unless_built_with, stoker_python_dir
from test_shards import collect, free_port, samples, tar_bytes, wait_listening

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# moto's server: $STOKER_MOTO_SERVER, else the one scripts/install-deps.sh installs.
MOTO_SERVER = os.environ.get("STOKER_MOTO_SERVER") or os.path.join(
    ROOT, ".venvs", "s3", "bin", "moto_server")
KEY, SECRET = "AKIDSTOKERTEST", "stoker-test-secret"  # the one account the proxy knows
REGION = "eu-test-1"
BUCKET = "shards"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


# ------------------------------------------------------------------ SigV4 (test side)

def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def sigv4_signature(secret, method, path, query, headers, signed, amz_date, region,
                    service, payload_hash):
    """The Signature V4 of a request, as AWS defines it (headers: lower-case names)."""
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    q = "&".join(sorted(urllib.parse.quote(k, safe="-_.~") + "=" + urllib.parse.quote(v, safe="-_.~")
                        for k, v in pairs))
    canonical_headers = "".join(f"{h}:{' '.join(headers[h].split())}\n" for h in signed)
    canonical = "\n".join([method, path, q, canonical_headers, ";".join(signed), payload_hash])
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = _hmac(("AWS4" + secret).encode(), amz_date[:8])
    for part in (region, service, "aws4_request"):
        k = _hmac(k, part)
    return hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()


def sign_headers(method, host, path, query="", payload_hash=EMPTY_SHA256, key=KEY,
                 secret=SECRET, region=REGION):
    amz_date = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    headers = {"host": host, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date}
    signed = sorted(headers)
    sig = sigv4_signature(secret, method, path, query, headers, signed, amz_date, region, "s3",
                          payload_hash)
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={key}/{amz_date[:8]}/{region}/s3/"
                                f"aws4_request, SignedHeaders={';'.join(signed)}, Signature={sig}")
    return headers


def test_test_signer_matches_aws_example():
    # "Example: GET Object" in the Amazon S3 API reference (SigV4, single chunk).
    headers = {"host": "examplebucket.s3.amazonaws.com", "range": "bytes=0-9",
               "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": "20130524T000000Z"}
    sig = sigv4_signature("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "GET", "/test.txt", "",
                          headers, sorted(headers), "20130524T000000Z", "us-east-1", "s3",
                          EMPTY_SHA256)
    assert sig == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"


# ------------------------------------------------------------------ servers

def _s3_error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()


class _VerifyingProxy(socketserver.StreamRequestHandler):
    """Verifies the request's SigV4 signature (with the secrets in server.secrets), then
    forwards it to moto's server. Per object path, the first server.drops responses are cut off
    after half of their body. server.max_keys forces small listing pages."""

    def handle(self):
        srv = self.server
        line = self.rfile.readline().decode()
        if not line:
            return
        headers = {}
        while True:
            h = self.rfile.readline().decode()
            if h in ("\r\n", "\n", ""):
                break
            k, _, v = h.partition(":")
            headers[k.strip().lower()] = v.strip()
        method, target = line.split()[:2]
        path, _, query = target.partition("?")
        with srv.lock:
            srv.log.append((method, path, query, headers.get("range")))
            n = srv.counts.get(path, 0) if not query else 0
            if not query:
                srv.counts[path] = n + 1
        if srv.delay and not query:
            time.sleep(srv.delay)  # slow objects: concurrent readers overlap
        refusal = self.verify(method, path, query, headers)
        if refusal:
            self.reply(403, "Forbidden", _s3_error(*refusal), {"Content-Type": "application/xml"})
            return
        if srv.max_keys and "list-type=2" in query:
            query = "&".join([p for p in query.split("&") if not p.startswith("max-keys=")] +
                             [f"max-keys={srv.max_keys}"])
        conn = http.client.HTTPConnection("127.0.0.1", srv.upstream, timeout=10)
        conn.request(method, path + ("?" + query if query else ""), headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        extra = {k: v for k, v in resp.getheaders()
                 if k.lower() in ("content-type", "content-range", "etag", "last-modified")}
        if method == "HEAD":  # the object's headers, its length included, and no body
            self.reply(resp.status, resp.reason, b"", extra,
                       length=int(resp.getheader("content-length", "0")))
            return
        cut = not query and resp.status in (200, 206) and n < srv.drops
        self.reply(resp.status, resp.reason, body, extra, cut=cut)

    def verify(self, method, path, query, headers):
        auth = headers.get("authorization", "")
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            return ("AccessDenied", "Anonymous access is not allowed")
        fields = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
        key, date, region, service, _ = fields["Credential"].split("/")
        secret = self.server.secrets.get(key)
        if secret is None:
            return ("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist")
        if region != REGION or service != "s3":
            return ("AuthorizationHeaderMalformed", f"wrong region or service: {region}/{service}")
        signed = fields["SignedHeaders"].split(";")
        if "host" not in signed or "x-amz-content-sha256" not in signed:
            return ("AccessDenied", "host and x-amz-content-sha256 must be signed")
        want = sigv4_signature(secret, method, path, query, headers, signed,
                               headers["x-amz-date"], region, service,
                               headers["x-amz-content-sha256"])
        if not hmac.compare_digest(want, fields["Signature"]):
            return ("SignatureDoesNotMatch", "The request signature we calculated does not "
                    "match the signature you provided. Check your key and signing method.")
        return None

    def reply(self, status, reason, body, headers, cut=False, length=None):
        length = len(body) if length is None else length
        head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {length}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.wfile.write((head + "Connection: close\r\n\r\n").encode())
        if cut:
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """moto's S3 server on a loopback port with the bucket, and the objects it holds."""
    skip_unless_built_with("curl")
    if not os.access(MOTO_SERVER, os.X_OK):
        if os.environ.get("CI"):  # CI ran `make deps`: a missing server is a broken install
            pytest.fail(f"moto's server is not installed at {MOTO_SERVER} "
                        "(scripts/install-deps.sh installs it)")
        pytest.skip(f"moto's server is not installed at {MOTO_SERVER} "
                    "(scripts/install-deps.sh installs it)")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen([MOTO_SERVER, "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc, timeout=60)
        # moto logs every request to stderr: drain it, or a full pipe stalls the server.
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        host = f"127.0.0.1:{port}"
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

        def put(path, body):
            headers = sign_headers("PUT", host, path,
                                   payload_hash=hashlib.sha256(body).hexdigest())
            conn.request("PUT", path, body=body, headers=headers)
            resp = conn.getresponse()
            detail = resp.read()
            assert resp.status == 200, (path, resp.status, detail)

        # Outside us-east-1, S3 (and moto) want the region as the location constraint.
        put(f"/{BUCKET}", (f"<CreateBucketConfiguration><LocationConstraint>{REGION}"
                           "</LocationConstraint></CreateBucketConfiguration>").encode())
        objects = {}
        for s in range(23):  # more than four pages of five keys
            objects[f"train/train-{s:06d}.tar"] = tar_bytes(samples(s, 2))
        objects["train/README.txt"] = b"not a shard"
        for s in range(3):
            objects[f"only/part {s}.tar"] = tar_bytes(samples(50 + s, 2))  # a space: encoded
        for key, body in objects.items():
            put(f"/{BUCKET}/" + urllib.parse.quote(key, safe="/-_.~"), body)
        conn.close()
        yield port, objects
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture()
def s3(s3_server, monkeypatch, tmp_path):
    """The verifying proxy in front of moto's server, and the environment pointing at it."""
    port, objects = s3_server
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _VerifyingProxy)
    server.daemon_threads = True
    server.upstream, server.secrets = port, {KEY: SECRET}
    server.lock, server.log, server.counts = threading.Lock(), [], {}
    server.drops, server.max_keys, server.delay = 0, 0, 0.0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws of the machine's user
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    try:
        yield server, endpoint, objects
    finally:
        server.shutdown()
        server.server_close()


def local_shards(tmp_path, objects, keys):
    paths = []
    for k in keys:
        p = tmp_path / k.replace("/", "_")
        p.write_bytes(objects[k])
        paths.append(str(p))
    return paths


# ------------------------------------------------------------------ tests

def test_s3_shards_read_through_the_loader(s3, tmp_path):
    server, _, objects = s3
    keys = [f"train/train-{s:06d}.tar" for s in range(3)]
    local = collect(stoker.Shards(local_shards(tmp_path, objects, keys), mode="stream"))
    remote = collect(stoker.Shards(f"s3://{BUCKET}/train/train-{{000000..000002}}.tar"))
    assert remote[1] == local[1] and len(remote[1]) == 6
    assert np.array_equal(remote[0], local[0])
    gets = [p for m, p, q, _ in server.log if m == "GET" and not q]
    assert sorted(set(gets)) == [f"/{BUCKET}/{k}" for k in keys]  # path-style on the endpoint


def test_s3_glob_lists_every_page(s3, tmp_path):
    server, _, objects = s3
    server.max_keys = 5  # 24 keys under train/: five pages
    src = stoker.Shards(f"s3://{BUCKET}/train/train-*.tar", shuffle_buffer=0)
    _, labels, _, _ = collect(src)
    keys = sorted(k for k in objects if k.startswith("train/train-"))
    local = collect(stoker.Shards(local_shards(tmp_path, objects, keys), mode="stream",
                                  shuffle_buffer=0))
    assert len(labels) == 46 and labels == local[1]
    lists = [q for m, p, q, _ in server.log if "list-type=2" in q]
    assert len(lists) == 5, lists
    assert "continuation-token=" not in lists[0]
    assert all("continuation-token=" in q for q in lists[1:])
    assert all("prefix=train%2Ftrain-" in q for q in lists)


def test_s3_prefix_takes_every_object_and_keys_are_encoded(s3, tmp_path):
    _, _, objects = s3
    keys = sorted(k for k in objects if k.startswith("only/"))
    local = collect(stoker.Shards(local_shards(tmp_path, objects, keys), mode="stream",
                                  shuffle_buffer=0))
    remote = collect(stoker.Shards(f"s3://{BUCKET}/only/", shuffle_buffer=0))
    assert remote[1] == local[1] and len(remote[1]) == 6
    with pytest.raises(FileNotFoundError, match=r"s3://shards/nothing/x-\*.tar.*no object"):
        stoker.Shards(f"s3://{BUCKET}/nothing/x-*.tar")


def test_s3_profile_from_files_and_endpoint_argument(s3, monkeypatch, tmp_path):
    server, endpoint, _ = s3
    creds, config = tmp_path / "creds", tmp_path / "config"
    creds.write_text(f"[train]\naws_access_key_id = {KEY}\naws_secret_access_key = {SECRET}\n")
    config.write_text(f"[profile train]\nregion = {REGION}\n")
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_PROFILE", "train")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    src = stoker.Shards(f"s3://{BUCKET}/train/train-00000[01].tar", endpoint_url=endpoint)
    _, labels, _, _ = collect(src)
    assert sorted(labels) == sorted([0, 1, 0, 1])  # samples 0,1 and 100,101: labels g % 10
    assert len(server.log) == 3  # one listing, two objects


def test_s3_wrong_secret_is_refused_naming_the_credential_source(s3, monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    url = f"s3://{BUCKET}/train/train-000000.tar"
    with pytest.raises(stoker.StokerError) as e:
        collect(stoker.Shards(url, retries=3, backoff_ms=1))
    msg = str(e.value)
    assert url in msg and "HTTP 403" in msg and "SignatureDoesNotMatch" in msg, msg
    assert f"environment (AWS_ACCESS_KEY_ID={KEY})" in msg and "not-the-secret" not in msg, msg

    # From a profile: the message names the profile and its file; listing names the bucket.
    creds = tmp_path / "creds"
    creds.write_text(f"[bad]\naws_access_key_id = {KEY}\naws_secret_access_key = wrong\n")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_PROFILE", "bad")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    with pytest.raises(stoker.StokerError,
                       match=rf"s3://{BUCKET}/train/ \(listing\).*403.*SignatureDoesNotMatch.*"
                             rf"profile 'bad' from {creds}"):
        stoker.Shards(f"s3://{BUCKET}/train/")


def test_s3_403_unknown_key_and_no_credentials(s3, monkeypatch):
    server, _, _ = s3
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN")
    url = f"s3://{BUCKET}/train/train-000001.tar"
    with pytest.raises(stoker.StokerError,
                       match=r"train-000001.tar: HTTP 403: InvalidAccessKeyId.*access denied; "
                             r"credentials from the environment \(AWS_ACCESS_KEY_ID=AKIDUNKNOWN\)"
                             rf", region {REGION}"):
        collect(stoker.Shards(url, retries=3, backoff_ms=1))
    assert len(server.log) == 1  # a 403 is not retried
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(stoker.StokerError, match=r"403: AccessDenied.*no credentials"):
        collect(stoker.Shards(url, retries=3, backoff_ms=1))


def test_s3_missing_object_names_bucket_and_key(s3):
    with pytest.raises(stoker.StokerError, match=rf"s3://{BUCKET}/train/nope.tar: HTTP 404: "
                                                 r"NoSuchKey"):
        collect(stoker.Shards(f"s3://{BUCKET}/train/nope.tar", retries=2, backoff_ms=1))


def test_s3_dropped_connections_resume_with_ranges(s3, tmp_path):
    server, _, objects = s3
    server.drops = 2
    keys = [f"train/train-{s:06d}.tar" for s in range(5, 8)]
    local = collect(stoker.Shards(local_shards(tmp_path, objects, keys), mode="stream"))
    remote = collect(stoker.Shards(f"s3://{BUCKET}/train/train-{{000005..000007}}.tar",
                                   retries=5, backoff_ms=1))
    assert remote[1] == local[1]
    assert np.array_equal(remote[0], local[0])
    for k in keys:
        ranges = [r for m, p, q, r in server.log if p == f"/{BUCKET}/{k}"]
        assert len(ranges) == 3, ranges  # two cut-off bodies, then the rest
        assert ranges[0] is None
        offsets = [int(r[6:].split("-")[0]) for r in ranges[1:]]
        assert 0 < offsets[0] < offsets[1] < len(objects[k])


def test_s3_cache_dir_downloads_each_object_once(s3, tmp_path):
    server, _, _ = s3
    url = f"s3://{BUCKET}/train/train-{{000010..000012}}.tar"
    cache = tmp_path / "cache"
    first = collect(stoker.Shards(url, cache_dir=str(cache)))
    second = collect(stoker.Shards(url, cache_dir=str(cache)))
    assert first[1] == second[1]
    assert len([1 for m, p, q, _ in server.log if m == "GET" and not q]) == 3


# One reader process: reads the shards through cache_dir and prints the labels in order.
_READER = """
import sys, json
sys.modules["torch"] = None  # stoker works without torch; importing it takes seconds
import numpy as np
import stoker
url, cache, cache_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
loader = stoker.Loader(stoker.Shards(url, cache_dir=cache, cache_bytes=cache_bytes,
                                     shuffle_buffer=0),
                       batch_size=4, transforms=[stoker.Resize((24, 24))], dtype="uint8")
labels, digest = [], 0
for im, lab in loader:
    labels += [int(x) for x in np.asarray(lab)]
    digest = (digest * 31 + int(np.asarray(im, dtype=np.int64).sum())) % (1 << 61)
print(json.dumps([labels, digest]))
"""


def run_readers(n, url, cache, cache_bytes=0):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [stoker_python_dir()] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    procs = [subprocess.Popen([sys.executable, "-c", _READER, url, str(cache),
                               str(cache_bytes)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(n)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode(errors="replace")
        outs.append(out.decode().strip())
    return outs


def cache_entries(cache):
    names = os.listdir(cache)
    assert not [n for n in names if ".tmp-" in n], names  # no fill left half-written
    return {n: os.path.getsize(cache / n) for n in names
            if not n.endswith(".lock") and not n.endswith(".meta")}  # locks, entries' records


def test_s3_cache_shared_by_processes_downloads_each_shard_once(s3, tmp_path):
    """Four processes start together on one cache_dir; every object is slow to serve, so
    their fills overlap: the file locks let one process download each shard and the others
    read its copy."""
    server, _, objects = s3
    server.delay = 0.3
    url = f"s3://{BUCKET}/train/train-{{000013..000018}}.tar"
    cache = tmp_path / "cache"
    outs = run_readers(4, url, cache)
    assert len(set(outs)) == 1, outs  # same samples, same pixels, same order
    gets = [p for m, p, q, _ in server.log if m == "GET" and not q]
    want = [f"/{BUCKET}/train/train-{s:06d}.tar" for s in range(13, 19)]
    assert sorted(gets) == want, gets  # each shard downloaded exactly once
    entries = cache_entries(cache)
    assert sorted(entries.values()) == sorted(len(objects[k[len(BUCKET) + 2:]]) for k in want)
    # A fifth process later finds everything cached and downloads nothing.
    assert run_readers(1, url, cache) == outs[:1]
    assert len([1 for m, p, q, _ in server.log if m == "GET" and not q]) == 6


def test_s3_cache_eviction_under_concurrent_processes(s3, tmp_path):
    """cache_bytes holds about two of the six shards: processes evict entries that others
    filled (and may be reading) while they fill theirs. Every process still reads every
    sample intact, and the cache ends within its bound."""
    server, _, objects = s3
    server.delay = 0.05
    url = f"s3://{BUCKET}/train/train-{{000013..000018}}.tar"
    sizes = [len(objects[f"train/train-{s:06d}.tar"]) for s in range(13, 19)]
    bound = 2 * max(sizes) + 1
    cache = tmp_path / "cache"
    uncached = run_readers(1, url, tmp_path / "alone")
    outs = run_readers(4, url, cache, bound)
    assert outs == uncached * 4
    entries = cache_entries(cache)
    assert 0 < sum(entries.values()) <= bound, entries
    # A later run finds only what the bound kept and downloads the rest again.
    def gets():
        return len([1 for m, p, q, _ in server.log if m == "GET" and not q])
    before = gets()
    assert run_readers(1, url, cache, bound) == uncached
    assert gets() - before >= 6 - len(entries) >= 3
    assert sum(cache_entries(cache).values()) <= bound
