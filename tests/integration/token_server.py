#!/usr/bin/env python3
"""A Docker-token-spec token server on 127.0.0.1 for tests/integration/test_registry.sh
(https://distribution.github.io/distribution/spec/auth/token/). It issues
RS256 JWTs signed with KEY (openssl signs; no Python crypto module needed),
with CERT in the x5c header, which the registry's auth.token.rootcertbundle
trusts. Anonymous requests get "pull" only; USER:PASSWORD (Basic) gets what
the scope asks; a wrong password gets 401.
Usage: token_server.py KEY CERT ISSUER USER PASSWORD PORT_FILE LOG_FILE
Logs "user-or-anonymous scope" lines to LOG_FILE.
"""
import base64
import http.server
import json
import os
import socketserver
import subprocess
import sys
import time
import urllib.parse

key, cert, issuer, user, password, port_file, log_file = sys.argv[1:8]
der = subprocess.run(["openssl", "x509", "-in", cert, "-outform", "DER"], check=True, capture_output=True).stdout


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def sign(claims):
    header = {"alg": "RS256", "typ": "JWT", "x5c": [base64.b64encode(der).decode()]}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=signing_input.encode(),
                         check=True, capture_output=True).stdout
    return signing_input + "." + b64url(sig)


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        who = "anonymous"
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            got = base64.b64decode(auth[6:]).decode(errors="replace")
            if got != f"{user}:{password}":
                with open(log_file, "a") as f:
                    f.write("denied\n")
                self.send_response(401)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            who = user
        access = []
        for scope in q.get("scope", []):
            parts = scope.split(":")
            if len(parts) != 3:
                continue
            actions = parts[2].split(",")
            if who == "anonymous":
                actions = [a for a in actions if a == "pull"]
            access.append({"type": parts[0], "name": parts[1], "actions": actions})
        with open(log_file, "a") as f:
            f.write(f"{who} {' '.join(q.get('scope', []))}\n")
        now = int(time.time())
        tok = sign({"iss": issuer, "sub": who, "aud": q.get("service", [""])[0], "exp": now + 300,
                    "nbf": now - 10, "iat": now, "jti": os.urandom(8).hex(), "access": access})
        body = json.dumps({"token": tok, "expires_in": 300}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = S(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
