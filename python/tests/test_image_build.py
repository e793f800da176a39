"""The SDK's image builder (sbx.Image: from_registry/from_dockerfile and the
chain) against a real `sbx serve` (conftest.py): each chain is a Dockerfile
built by POST /sbx/v1/build, cached by the builder's rules, usable as
``image=`` in Sandbox.create. apt_install/pip_install need a package index:
offline only their generated Dockerfile lines are checked."""
import os

import pytest

import sbx
from conftest import GVISOR

BB = "busybox:latest"

pytestmark = pytest.mark.skipif(GVISOR, reason="builds run their steps on the native backend")


def test_apt_and_pip_install_generate_run_lines():
    img = sbx.Image.from_registry("python:latest").apt_install("curl", ["git"]).pip_install(
        "requests==2.31", index_url="http://127.0.0.1:9/simple")
    assert img.dockerfile().splitlines() == [
        "FROM python:latest",
        "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends curl git",
        "RUN python -m pip install --no-cache-dir --index-url http://127.0.0.1:9/simple requests==2.31",
    ]
    # Immutable: the base is unchanged by the chain.
    base = sbx.Image.from_registry("python:latest")
    base.run_commands("true")
    assert base.dockerfile() == "FROM python:latest\n"


def _chain(d):
    return (sbx.Image.from_registry(BB)
            .env({"GREETING": "hello world", "N": "1"})
            .workdir("/app")
            .add_local_dir(d, "/app/data", ignore=["*.tmp"])
            .run_commands("echo \"$GREETING\" >/app/out.txt", "ls /app/data >/app/listing.txt"))


def test_chain_builds_and_runs_and_is_cached(client, tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    (d / "f.txt").write_text("local-file\n")
    (d / "skip.tmp").write_text("x")
    events = []
    img = _chain(d).build(client, network="none", on_event=events.append)
    assert len(str(img)) == 64
    steps = [e for e in events if e["event"] == "step"]
    assert [e["instruction"].split()[0] for e in steps] == ["FROM", "ENV", "WORKDIR", "COPY", "RUN", "RUN"]
    sb = sbx.Sandbox.create(image=img, client=client, timeout=60)
    try:
        p = sb.exec("sh", "-c", "cat /app/out.txt; pwd; cat data/f.txt; cat /app/listing.txt; echo $N")
        assert p.stdout.read() == "hello world\n/app\nlocal-file\nf.txt\n1\n"
        assert p.wait() == 0
    finally:
        sb.terminate()
    # The same chain again (a new object): every step from the build cache, the same image.
    events2 = []
    again = _chain(d).build(client, network="none", on_event=events2.append)
    assert str(again) == str(img)
    assert sum(e["event"] == "cached" for e in events2) == 5
    # A changed local file: the COPY and what follows rebuild, the steps before it do not.
    (d / "f.txt").write_text("changed\n")
    events3 = []
    changed = _chain(d).build(client, network="none", on_event=events3.append)
    assert str(changed) != str(img)
    assert sum(e["event"] == "cached" for e in events3) == 2


def test_sandbox_create_builds_an_image_chain(client, tmp_path):
    img = sbx.Image.from_registry(BB).run_commands("echo built-by-create >/made.txt")
    sb = sbx.Sandbox.create("cat", "/made.txt", image=img, client=client, timeout=60)
    try:
        assert sb.wait() == 0
    finally:
        sb.terminate()
    assert len(str(img)) == 64  # built once, remembered by the object
    sb = sbx.Sandbox.create(image=img, client=client, timeout=60)
    try:
        assert sb.exec("cat", "/made.txt").stdout.read() == "built-by-create\n"
    finally:
        sb.terminate()


def test_from_dockerfile_with_context_args_target_and_a_chain_on_top(client, tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "app.txt").write_text("from-context\n")
    (ctx / "Dockerfile").write_text(
        "FROM busybox AS base\nARG WHO=nobody\nCOPY app.txt /app.txt\nRUN echo hi-$WHO >/who.txt\n"
        "FROM base AS unused\nRUN exit 9\n")
    img = sbx.Image.from_dockerfile(ctx / "Dockerfile", context_dir=ctx, build_args={"WHO": "sdk"}, target="base")
    top = img.workdir("/w").run_commands("cat /app.txt /who.txt >/w/both.txt")
    sb = sbx.Sandbox.create(image=top, client=client, timeout=60)
    try:
        assert sb.exec("cat", "both.txt").stdout.read() == "from-context\nhi-sdk\n"
    finally:
        sb.terminate()
    # A Dockerfile outside its context travels beside it.
    other = tmp_path / "elsewhere.Dockerfile"
    other.write_text("FROM busybox\nCOPY app.txt /x.txt\n")
    img2 = sbx.Image.from_dockerfile(other, context_dir=ctx).build(client)
    sb = sbx.Sandbox.create(image=img2, client=client, timeout=60)
    try:
        assert sb.exec("cat", "/x.txt").stdout.read() == "from-context\n"
    finally:
        sb.terminate()


def test_a_failing_step_raises_build_error_and_leaves_nothing(client):
    before = {s.object_id for s in sbx.Sandbox.list(all=True, client=client)}
    img = sbx.Image.from_registry(BB).run_commands("echo sdk-failing-output; exit 4")
    with pytest.raises(sbx.BuildError) as e:
        img.build(client, network="none")
    assert "non-zero code: 4" in e.value.message
    assert "sdk-failing-output" in e.value.log
    assert e.value.exit_code == 1
    with pytest.raises(sbx.BuildError) as e:
        sbx.Image.from_registry("no-such-image-here:1").run_commands("true").build(client)
    assert e.value.exit_code == 125
    assert {s.object_id for s in sbx.Sandbox.list(all=True, client=client)} == before  # no step's sandbox left


def test_bad_input_is_refused_before_a_build(client, tmp_path):
    with pytest.raises(sbx.FileNotFound):
        sbx.Image.from_dockerfile(tmp_path / "none")
    with pytest.raises(sbx.FileNotFound):
        sbx.Image.from_registry(BB).add_local_dir(tmp_path / "none", "/x")
    with pytest.raises(sbx.InvalidArgument):
        sbx.Image.from_registry(BB).env({"A=B": "1"})
