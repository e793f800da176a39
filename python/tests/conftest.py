"""pytest fixtures for the SDK tests: a real `sbx serve` on a temp socket.

Run by tests/integration/test_sdk.sh, which provides the environment:
SBX (the binary), SBX_ROOT / SBX_RUN_ROOT (temp store with the busybox and
python test images), SBX_TEST_RUNTIME (native or gvisor), SBX_TEST_TMP (a
temp dir), SBX_TEST_SRC (the source tree).
"""
import os
import signal
import subprocess
import time

import pytest

import sbx

RUNTIME = os.environ.get("SBX_TEST_RUNTIME", "native")
GVISOR = RUNTIME == "gvisor"


class Server:
    """One `sbx serve` process; restart() stops it (SIGTERM) and starts another."""

    def __init__(self, tmp):
        self.sock = os.path.join(tmp, "sdk.sock")
        self.log = open(os.path.join(tmp, "sdk-serve.log"), "ab")
        self.proc = None
        self.start()

    def start(self):
        args = [os.environ["SBX"], "--log-level", "info", "serve", "--socket", self.sock, "--runtime", RUNTIME]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        for _ in range(200):
            if os.path.exists(self.sock):
                return
            time.sleep(0.02)
        raise RuntimeError("sbx serve did not start; see " + self.log.name)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        self.proc = None

    def restart(self):
        self.stop()
        self.start()

    @property
    def pid(self):
        return self.proc.pid


@pytest.fixture(scope="session")
def server():
    s = Server(os.environ.get("SBX_TEST_TMP", "/tmp"))
    os.environ["SBX_HOST"] = "unix://" + s.sock
    yield s
    s.stop()


@pytest.fixture
def client(server):
    return sbx.Client("unix://" + server.sock)


@pytest.fixture
def sb(client):
    s = sbx.Sandbox.create("python:latest", client=client, timeout=120)
    yield s
    s.terminate()
