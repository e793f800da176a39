#!/usr/bin/env python3
"""A small, deliberately broken OCI registry on 127.0.0.1 for the fault tests
of tests/integration/test_registry.sh. It serves one image from an OCI layout
directory (its index.json's first manifest) under any repository and tag, and
misbehaves as MODE says:
  ok               a correct registry (Range supported)
  corrupt          one byte of the largest layer blob flipped (same size)
  truncate-once    the largest blob's first answer is cut in the middle; then fine
  truncate-always  every answer for the largest blob is cut in the middle
  slow             the largest blob trickles (16 KiB every 0.1 s)
  slow-top         the top (last) layer's blob starts after 2 s
  huge-manifest    the manifest is 8 MiB of JSON
  schema1          the manifest is a Docker schema 1 manifest
Usage: fake_registry.py LAYOUT_DIR MODE PORT_FILE LOG_FILE
Writes the port it listens on to PORT_FILE; logs "METHOD PATH RANGE" lines to LOG_FILE.
"""
import http.server
import json
import os
import socketserver
import sys
import time

layout, mode, port_file, log_file = sys.argv[1:5]
index = json.load(open(os.path.join(layout, "index.json")))
mdesc = index["manifests"][0]


def blob(digest):
    with open(os.path.join(layout, "blobs", *digest.split(":")), "rb") as f:
        return f.read()


manifest = blob(mdesc["digest"])
mjson = json.loads(manifest)
largest = max(mjson["layers"], key=lambda l: l["size"])["digest"]
top = mjson["layers"][-1]["digest"]
served = {"count": 0}


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body=b"", ctype="application/octet-stream", extra=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        rng = self.headers.get("Range", "")
        with open(log_file, "a") as f:
            f.write(f"{self.command} {self.path} {rng}\n")
        p = self.path
        if p == "/v2/":
            return self.send(200, b"{}", "application/json")
        if "/manifests/" in p:
            if mode == "huge-manifest":
                body = b'{"schemaVersion":2,"layers":[' + b'{"a":1},' * (1 << 20) + b'{}]}'
                return self.send(200, body, mdesc["mediaType"])
            if mode == "schema1":
                body = json.dumps({"schemaVersion": 1, "name": "x", "tag": "latest", "fsLayers": []}).encode()
                return self.send(200, body, "application/vnd.docker.distribution.manifest.v1+prettyjws")
            return self.send(200, manifest, mdesc["mediaType"])
        if "/blobs/" in p:
            digest = p.rsplit("/", 1)[1]
            try:
                data = blob(digest)
            except OSError:
                return self.send(404, b'{"errors":[{"code":"BLOB_UNKNOWN"}]}', "application/json")
            if digest == largest and mode == "corrupt":
                data = bytearray(data)
                data[len(data) // 2] ^= 0xFF
                data = bytes(data)
            start = 0
            if rng.startswith("bytes=") and rng.endswith("-"):
                start = int(rng[6:-1])
            cut = digest == largest and (mode == "truncate-always" or (mode == "truncate-once" and served["count"] == 0))
            if digest == largest:
                served["count"] += 1
            body = data[start:]
            self.send_response(206 if start else 200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if self.command == "HEAD":
                return
            if cut:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if digest == top and mode == "slow-top":
                time.sleep(2)
            if digest == largest and mode == "slow":
                for i in range(0, len(body), 16384):
                    self.wfile.write(body[i:i + 16384])
                    self.wfile.flush()
                    time.sleep(0.1)
                return
            self.wfile.write(body)
            return
        self.send(404, b'{"errors":[{"code":"NAME_UNKNOWN"}]}', "application/json")


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # clients that hang up on a hostile answer are expected


srv = S(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
