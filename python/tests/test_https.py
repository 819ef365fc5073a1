"""stoker.Shards over https:// from a real TLS server: nginx on loopback with a self-signed
certificate that the test makes with the openssl command (subject alternative name
DNS:localhost only, so https://127.0.0.1 is a host-name mismatch).

Checks that verification is on by default (the system's CAs do not trust the certificate),
that ca_file= trusts it, that verify=False skips both the chain and the host-name check,
and that an s3:// endpoint behind TLS (nginx in front of the S3 server of test_s3.py) reads
with ca_file=.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess

import numpy as np
import pytest

import stoker
from conftest import needs_curl
from test_shards import collect, free_port, samples, tar_bytes, wait_listening
from test_s3 import BUCKET, s3, s3_server  # noqa: F401 (fixtures)

pytestmark = needs_curl

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def make_cert(d, name: str, san: str = "DNS:localhost"):
    key, cert = d / f"{name}.key", d / f"{name}.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
                    "/CN=localhost", "-addext", f"subjectAltName={san}",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return str(key), str(cert)


@contextlib.contextmanager
def tls_nginx(prefix, key, cert, location: str):
    """nginx listening with TLS on a loopback port; `location` is the body of `location /`."""
    if not os.path.exists(NGINX):
        pytest.skip("nginx is not installed (scripts/install-deps.sh installs it)")
    port = free_port()
    temp = " ".join(f"{k}_temp_path {prefix}/{k};" for k in
                    ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    user = "user root;" if os.geteuid() == 0 else ""
    conf = prefix / "nginx.conf"
    conf.write_text(f"""{user}
worker_processes 1;
events {{ worker_connections 64; }}
http {{
  access_log off; {temp}
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert}; ssl_certificate_key {key};
    location / {{ {location} }}
  }}
}}
""")
    proc = subprocess.Popen(
        [NGINX, "-p", str(prefix), "-c", str(conf),
         "-g", f"daemon off; pid {prefix}/nginx.pid; error_log {prefix}/error.log;"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def https(tmp_path_factory):
    """nginx serving three shards over TLS; (port, cert, other CA's cert, local shard paths)."""
    d = tmp_path_factory.mktemp("https")
    key, cert = make_cert(d, "server")
    _, other = make_cert(d, "other")  # a CA that did not sign the server's certificate
    root = d / "www"
    root.mkdir()
    local = []
    for s in range(3):
        p = root / f"train-{s:06d}.tar"
        p.write_bytes(tar_bytes(samples(s, 3)))
        local.append(str(p))
    prefix = d / "nginx"
    prefix.mkdir()
    with tls_nginx(prefix, key, cert, f"root {root};") as port:
        yield port, cert, other, local


URL = "https://localhost:{port}/train-{{000000..000002}}.tar"


def test_https_with_ca_file_reads_the_shards(https, tmp_path):
    port, cert, _, local = https
    want = collect(stoker.Shards(local, mode="stream"))
    got = collect(stoker.Shards(URL.format(port=port), ca_file=cert))
    assert got[1] == want[1] and len(got[1]) == 9
    assert np.array_equal(got[0], want[0])
    # Through the node-wide cache too: the cached copies are the served bytes.
    cache = tmp_path / "cache"
    cached = collect(stoker.Shards(URL.format(port=port), ca_file=cert, cache_dir=str(cache)))
    assert cached[1] == want[1]
    entries = [n for n in os.listdir(cache) if not n.endswith((".lock", ".meta"))]
    assert sorted(open(cache / n, "rb").read() for n in entries) == \
        sorted(open(p, "rb").read() for p in local)


def test_https_verifies_by_default(https):
    port, _, _, _ = https
    with pytest.raises(stoker.StokerError,
                       match=r"train-000000.tar: TLS certificate not trusted: .*"
                             r"CA file: the system's; pass ca_file="):
        collect(stoker.Shards(URL.format(port=port), retries=3, backoff_ms=1))


def test_https_refuses_a_certificate_from_another_ca(https):
    port, _, other, _ = https
    with pytest.raises(stoker.StokerError,
                       match=rf"TLS certificate not trusted: .*CA file: {other};"):
        collect(stoker.Shards(URL.format(port=port), ca_file=other, retries=3, backoff_ms=1))


def test_https_checks_the_host_name(https):
    port, cert, _, _ = https
    url = f"https://127.0.0.1:{port}/train-000000.tar"  # the certificate names localhost only
    with pytest.raises(stoker.StokerError, match=r"TLS certificate not trusted: .*127\.0\.0\.1"):
        collect(stoker.Shards(url, ca_file=cert, retries=3, backoff_ms=1))
    # verify=False skips the host-name check as well as the chain.
    assert len(collect(stoker.Shards(url, verify=False))[1]) == 3


def test_https_verify_false_trusts_any_certificate(https):
    port, _, _, local = https
    want = collect(stoker.Shards(local, mode="stream"))
    got = collect(stoker.Shards(URL.format(port=port), verify=False))
    assert got[1] == want[1] and np.array_equal(got[0], want[0])


def test_https_missing_ca_file_is_named(https, tmp_path):
    port, _, _, _ = https
    missing = tmp_path / "no-such-ca.pem"
    with pytest.raises(stoker.StokerError, match=rf"no-such-ca.pem"):
        collect(stoker.Shards(URL.format(port=port), ca_file=str(missing), retries=3,
                              backoff_ms=1))


def test_s3_endpoint_over_https(s3, https, tmp_path, monkeypatch):  # noqa: F811
    """s3:// through an https:// endpoint: nginx terminates TLS in front of the S3 server
    (the signature covers the Host header, which nginx passes on unchanged)."""
    server, _, objects = s3
    _, cert, other, _ = https
    key, _ = os.path.splitext(cert)
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    upstream = server.server_address[1]
    location = (f"proxy_pass http://127.0.0.1:{upstream}; proxy_set_header Host $http_host; "
                "proxy_http_version 1.1; proxy_buffering off;")
    with tls_nginx(prefix, key + ".key", cert, location) as port:
        endpoint = f"https://localhost:{port}"
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        keys = [f"train/train-{s:06d}.tar" for s in range(3)]
        paths = []
        for k in keys:
            p = tmp_path / k.replace("/", "_")
            p.write_bytes(objects[k])
            paths.append(str(p))
        want = collect(stoker.Shards(paths, mode="stream"))
        got = collect(stoker.Shards(f"s3://{BUCKET}/train/train-00000[0-2].tar", ca_file=cert))
        assert got[1] == want[1] and np.array_equal(got[0], want[0])
        assert [q for m, p, q, _ in server.log if "list-type=2" in q]  # listed over TLS too
        with pytest.raises(stoker.StokerError, match=r"s3://shards/train/ \(listing\).*"
                                                     r"TLS certificate not trusted"):
            stoker.Shards(f"s3://{BUCKET}/train/", ca_file=other, retries=2, backoff_ms=1)
