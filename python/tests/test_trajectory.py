"""Recorded sandboxes through the SDK and /sbx/v1 (see conftest.py): the
trajectory as a list of steps, a branch from a step, a replay that matches
and one that reports the first step that diverged (by its output, and by
the files it changed alone)."""
import json

import pytest

import sbx
from conftest import GVISOR

BB = "busybox:latest"
# gVisor keeps the writable layer inside runsc: its steps are recorded but
# not restorable, so there is nothing to branch from or compare files with.
pytestmark = pytest.mark.skipif(GVISOR, reason="branch and file comparison need the native writable layer")


@pytest.fixture
def rec(client):
    s = sbx.Sandbox.create(BB, record=True, client=client, timeout=0)
    yield s
    s.terminate()


def _run(sb, script):
    p = sb.exec("sh", "-c", script)
    return p.wait()


def test_trajectory_lists_the_steps(rec):
    assert _run(rec, "mkdir -p /work && echo one > /work/a") == 0
    assert _run(rec, "echo two > /work/b; exit 3") == 3
    rec.files.write("/work/c", b"three")
    steps = rec.trajectory()
    execs = [s for s in steps if s["kind"] == "exec" and s["argv"][:2] == ["sh", "-c"]]
    assert [s["exit_code"] for s in execs] == [0, 3], steps
    assert all(s["step"] == i + 1 for i, s in enumerate(steps)), steps
    assert execs[0]["checkpoint"] and any(f["path"] == "/work/a" for f in execs[0]["checkpoint"]["files"])
    head = rec.trajectory(header=True)[0]
    assert head["format"] == "sbx-trajectory" and head["version"] == 1, head


def test_branch_gets_the_files_of_its_step(rec):
    _run(rec, "mkdir -p /work && echo one > /work/a")
    at = len(rec.trajectory())
    _run(rec, "echo later > /work/later; rm /work/a")
    b = rec.branch(step=at, name="sdk-branch")
    try:
        assert isinstance(b, sbx.Sandbox) and b.object_id != rec.object_id and b.name == "sdk-branch"
        assert b.files.read("/work/a") == b"one\n"
        assert not b.files.exists("/work/later")
        first = b.trajectory()[0]
        assert first["kind"] == "branch" and first["parent"]["at"] == at, first
    finally:
        b.terminate()
    two = rec.branch(at=at, count=2)
    try:
        assert len(two) == 2 and len({x.object_id for x in two}) == 2
        for x in two:
            assert x.files.read("/work/a") == b"one\n"
    finally:
        for x in two:
            x.terminate()


def test_replay_matches_then_reports_the_first_divergence(rec):
    _run(rec, "mkdir -p /work && echo one > /work/a && cat /work/a")
    _run(rec, "ls /work")
    r = sbx.replay(rec)
    assert r.matched and r.first_divergence is None and r.sandbox is None, r
    assert [s["result"] for s in r.steps if s["kind"] == "exec"] == ["match", "match"], r.steps
    # Output that differs on every run: the step that printed it diverges.
    _run(rec, "cat /proc/sys/kernel/random/uuid")
    n = len(rec.trajectory())
    r = rec.replay()
    assert not r.matched and r.first_divergence == n, r
    assert "stdout differs" in r.steps[-1]["difference"], r.steps[-1]
    # --until before it: all match again; keep: the replay's sandbox is ours.
    r = rec.replay(until=n - 1, keep=True)
    try:
        assert r.matched and r.sandbox is not None
        assert r.sandbox.files.read("/work/a") == b"one\n"
        # The recorded SOURCE_DATE_EPOCH, not the replay's own time.
        env = "sh", "-c", "echo $SOURCE_DATE_EPOCH"
        assert r.sandbox.exec(*env).stdout.read() == rec.exec(*env).stdout.read() != "\n"
    finally:
        r.sandbox.terminate()
    r = rec.replay(tolerate_regex=["^[0-9a-f-]{36}$"])
    assert r.matched, r.steps


def test_replay_compares_the_files_a_step_changed(rec):
    # Same exit code and no output, but what it wrote differs on every run.
    _run(rec, "mkdir -p /work && echo same > /work/same")
    _run(rec, "head -c 16 /dev/urandom > /work/random")
    _run(rec, "echo after > /work/after")
    steps = rec.trajectory()
    r = rec.replay()
    assert not r.matched and r.first_divergence == steps[1]["step"], r
    assert "/work/random" in r.steps[-1]["difference"], r.steps[-1]
    assert rec.replay(tolerate_path=["^/work/random$"]).matched


def test_errors(client, rec):
    with sbx.Sandbox.create(BB, client=client, timeout=0) as plain:
        with pytest.raises(sbx.Conflict, match="records no trajectory"):
            plain.trajectory()
        with pytest.raises(sbx.Conflict):
            plain.branch(step=1)
        with pytest.raises(sbx.Conflict):
            plain.replay()
    _run(rec, "true")
    with pytest.raises(sbx.NotFound, match="out of range"):
        rec.branch(step=99)
    with pytest.raises(sbx.NotFound, match="out of range"):
        rec.replay(until=99)
    with pytest.raises(sbx.SandboxNotFound):
        sbx.replay("0000nosuch", client=client)
    path = "/sbx/v1/sandboxes/" + rec.object_id
    for body in ({}, {"step": "one"}, {"step": 1, "count": "2"}, {"step": 1, "name": 5}):
        with pytest.raises(sbx.InvalidArgument):
            client.request("POST", path + "/branch", body=body)
    with pytest.raises(sbx.InvalidArgument):
        client.request("POST", path + "/replay", body={"tolerate_regex": "("})
    with pytest.raises(sbx.InvalidArgument):
        client.request("POST", path + "/replay", body={"tolerate_regex": ["("]})
    with pytest.raises(sbx.InvalidArgument, match="tolerate-path"):
        client.request("POST", path + "/replay", body={"tolerate_path": ["("]})
    with pytest.raises(sbx.InvalidArgument):
        client.request("POST", path + "/branch", body=[1])
    # The trajectory endpoint's answer is JSON lines, the header first.
    lines = client.request_bytes("GET", path + "/trajectory").decode().splitlines()
    assert json.loads(lines[0])["format"] == "sbx-trajectory" and len(lines) >= 2


def test_a_trajectory_file_uploaded_replays_and_reads(rec, client):
    """/sbx/v1/trajectories/*: the file as the body (here the JSON lines the
    server gave for a recorded sandbox, as if recorded elsewhere)."""
    _run(rec, "mkdir -p /work && echo one > /work/a; echo out")
    data = ("\n".join(json.dumps(l) for l in rec.trajectory(header=True)) + "\n").encode()
    lines = sbx.trajectory_file(data, client=client)
    assert lines[0]["format"] == "sbx-trajectory" and lines[1]["kind"] == "exec", lines
    res = sbx.replay_file(data, client=client)
    assert res.matched and res.first_divergence is None, res
    changed = data.replace(b"echo out", b"echo OUT")
    res = sbx.replay_file(changed, client=client)
    n = [s for s in lines[1:] if s["kind"] == "exec" and "echo out" in s["argv"][-1]][0]["step"]
    assert not res.matched and res.first_divergence == n and "stdout" in res.steps[-1]["difference"], res
    # A bare trajectory.jsonl has no objects: a branch needs the export archive.
    with pytest.raises(sbx.NotFound, match="missing"):
        sbx.branch_file(data, step=1, client=client)
    with pytest.raises(sbx.InvalidArgument, match="truncated"):
        sbx.trajectory_file(data[:-5], client=client)
    with pytest.raises(sbx.InvalidArgument, match="one of them"):
        sbx.trajectory_file(client=client)
