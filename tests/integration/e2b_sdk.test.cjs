// The unmodified `e2b` npm package against `sbx serve --e2b` (node --test).
// Run by test_e2b.sh, which starts the server and sets E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY (the SDK's documented settings) and
// SBX_E2B_TEMPLATE (an sbx image), SBX_E2B_HOST_MARK (a host path no sandbox
// may create).
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { Sandbox, CommandExitError, SandboxError, AuthenticationError, FileNotFoundError } = require('e2b');

const template = process.env.SBX_E2B_TEMPLATE || 'busybox';
let sb;

before(async () => {
  sb = await Sandbox.create(template, { metadata: { suite: 'sbx-e2b' } });
});

after(async () => {
  if (sb) await sb.kill().catch(() => {});
});

test('Sandbox.create gives a running sandbox that getInfo and list know', async () => {
  assert.match(sb.sandboxId, /^[0-9a-f]{20}$/);
  assert.equal(await sb.isRunning(), true);
  const info = await sb.getInfo();
  assert.equal(info.sandboxId, sb.sandboxId);
  assert.equal(info.templateId, template);
  assert.equal(info.metadata.suite, 'sbx-e2b');
  assert.ok(info.endAt > info.startedAt, 'endAt after startedAt');
  const listed = await Sandbox.list({ query: { metadata: { suite: 'sbx-e2b' } } }).nextItems();
  assert.ok(listed.some((s) => s.sandboxId === sb.sandboxId), 'Sandbox.list finds it by metadata');
});

test("commands.run('echo hi') gives exit code 0 and stdout", async () => {
  const r = await sb.commands.run('echo hi');
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, 'hi\n');
  assert.equal(r.stderr, '');
});

test('a failing command: CommandExitError with its exit code, stdout and stderr', async () => {
  await assert.rejects(sb.commands.run('echo out; echo err >&2; exit 3'), (e) => {
    assert.ok(e instanceof CommandExitError);
    assert.equal(e.exitCode, 3);
    assert.equal(e.stdout, 'out\n');
    assert.equal(e.stderr, 'err\n');
    return true;
  });
});

test('envs, cwd and callbacks reach the command', async () => {
  const seen = [];
  const r = await sb.commands.run('echo "$GREETING"; pwd', {
    envs: { GREETING: 'hello e2b' },
    cwd: '/tmp',
    onStdout: (d) => seen.push(d),
  });
  assert.equal(r.stdout, 'hello e2b\n/tmp\n');
  assert.equal(seen.join(''), r.stdout);
});

test('stdin: sendStdin and closeStdin', async () => {
  const h = await sb.commands.run('cat', { background: true, stdin: true });
  await h.sendStdin('line one\n');
  await h.sendStdin('line two\n');
  await h.closeStdin();
  const r = await h.wait();
  assert.equal(r.stdout, 'line one\nline two\n');
});

test('a background command runs, is listed, and kill() ends it', async () => {
  const out = [];
  const h = await sb.commands.run('echo started; sleep 60', { background: true, onStdout: (d) => out.push(d) });
  assert.ok(h.pid > 0);
  for (let i = 0; i < 100 && !out.join('').includes('started'); i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(out.join(''), 'started\n');
  let procs = await sb.commands.list();
  assert.ok(procs.some((p) => p.pid === h.pid), 'commands.list shows it');
  const t0 = Date.now();
  assert.equal(await h.kill(), true);
  await assert.rejects(h.wait(), (e) => e instanceof CommandExitError && e.exitCode === -1);
  assert.ok(Date.now() - t0 < 10000, 'killed well before its sleep ended');
  procs = await sb.commands.list();
  assert.ok(!procs.some((p) => p.pid === h.pid), 'gone from commands.list');
  assert.equal(await sb.commands.kill(h.pid), false, 'a second kill finds nothing');
});

test("a command's timeoutMs: the client gives up and the process is killed, as envd does", async () => {
  const t0 = Date.now();
  await assert.rejects(sb.commands.run('sleep 33; echo late', { timeoutMs: 1000 }));
  assert.ok(Date.now() - t0 < 10000, 'the call ended near its timeout');
  // gVisor: exec's kill reaches the command's shell, not the children it
  // started (runsc kill --pid); docs/e2b.md says so.
  if (process.env.SBX_TEST_RUNTIME === 'gvisor') return;
  let left = true;
  for (let i = 0; i < 50 && left; i++) {
    const ps = await sb.commands.run('ps -o args 2>/dev/null || ps');
    left = ps.stdout.includes('sleep 33');
    if (left) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(left, false, 'no sleep 33 left in the sandbox');
});

test('Sandbox.connect and commands.connect re-attach to a sandbox and a running command', async () => {
  const same = await Sandbox.connect(sb.sandboxId);
  assert.equal((await same.commands.run('echo again')).stdout, 'again\n');
  const h = await sb.commands.run('echo one; sleep 0.5; echo two; sleep 60', { background: true });
  await h.disconnect();
  const seen = [];
  const h2 = await same.commands.connect(h.pid, { onStdout: (d) => seen.push(d) });
  for (let i = 0; i < 100 && !seen.join('').includes('two'); i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(seen.join(''), 'one\ntwo\n', 'the re-attached stream has the output so far and what follows');
  assert.equal(await h2.kill(), true);
  await assert.rejects(h2.wait(), CommandExitError);
  await assert.rejects(same.commands.connect(h.pid), (e) => e instanceof SandboxError, 'an ended process is gone');
});

test('files.write / files.read round trip text and bytes', async () => {
  const w = await sb.files.write('/tmp/e2b/dir/a.txt', 'hello file\n');
  assert.equal(w.path, '/tmp/e2b/dir/a.txt');
  assert.equal(w.name, 'a.txt');
  assert.equal(await sb.files.read('/tmp/e2b/dir/a.txt'), 'hello file\n');
  const bytes = new Uint8Array(70000);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 8)) & 0xff;
  bytes[0] = 0;
  bytes[1] = 0xff;
  await sb.files.write('/tmp/e2b/bin.dat', bytes.buffer);
  const back = await sb.files.read('/tmp/e2b/bin.dat', { format: 'bytes' });
  assert.equal(back.length, bytes.length);
  assert.ok(Buffer.from(back).equals(Buffer.from(bytes)), 'bytes come back unchanged');
  const r = await sb.commands.run('echo $(wc -c < /tmp/e2b/bin.dat); cat /tmp/e2b/dir/a.txt');
  assert.equal(r.stdout, '70000\nhello file\n');
  await sb.files.write([{ path: '/tmp/e2b/m1', data: 'one' }, { path: '/tmp/e2b/m2', data: 'two' }]);
  assert.equal(await sb.files.read('/tmp/e2b/m2'), 'two');
});

test('files.list, exists, getInfo, makeDir, rename, remove', async () => {
  await sb.files.write('/tmp/e2b/l/x.txt', '12345');
  assert.equal(await sb.files.makeDir('/tmp/e2b/l/sub'), true);
  assert.equal(await sb.files.makeDir('/tmp/e2b/l/sub'), false, 'makeDir of an existing dir');
  await sb.commands.run("ln -s x.txt /tmp/e2b/l/link && touch '/tmp/e2b/l/new\nline'");
  const entries = await sb.files.list('/tmp/e2b/l');
  const by = Object.fromEntries(entries.map((e) => [e.name, e]));
  assert.deepEqual(Object.keys(by).sort(), ['link', 'new\nline', 'sub', 'x.txt']);
  assert.equal(by['x.txt'].type, 'file');
  assert.equal(by['x.txt'].size, 5);
  assert.equal(by['x.txt'].path, '/tmp/e2b/l/x.txt');
  assert.equal(by['sub'].type, 'dir');
  assert.equal(by['link'].type, 'symlink');
  assert.equal(by['link'].symlinkTarget, 'x.txt');
  assert.equal(by['new\nline'].path, '/tmp/e2b/l/new\nline');
  assert.equal(await sb.files.exists('/tmp/e2b/l/x.txt'), true);
  assert.equal(await sb.files.exists('/tmp/e2b/l/nope'), false);
  const info = await sb.files.getInfo('/tmp/e2b/l/sub');
  assert.equal(info.type, 'dir');
  const moved = await sb.files.rename('/tmp/e2b/l/x.txt', '/tmp/e2b/l/sub/y.txt');
  assert.equal(moved.path, '/tmp/e2b/l/sub/y.txt');
  assert.equal(await sb.files.read('/tmp/e2b/l/sub/y.txt'), '12345');
  await sb.files.remove('/tmp/e2b/l/sub');
  assert.equal(await sb.files.exists('/tmp/e2b/l/sub'), false);
  await assert.rejects(sb.files.read('/tmp/e2b/l/sub/y.txt'), (e) => e instanceof FileNotFoundError);
  await assert.rejects(sb.files.list('/tmp/e2b/none'), (e) => e instanceof SandboxError);
});

test('hostile paths stay inside the sandbox', async () => {
  const mark = process.env.SBX_E2B_HOST_MARK;
  assert.ok(mark, 'SBX_E2B_HOST_MARK is set');
  await sb.commands.run('ln -s / /tmp/e2b/rootlink');
  await sb.files.write('/tmp/e2b/rootlink' + mark, 'x');
  await sb.files.write('/../../..' + mark + '-dots', 'y');
  assert.equal(fs.existsSync(mark), false, 'nothing written on the host through a symlink');
  assert.equal(fs.existsSync(mark + '-dots'), false, 'nothing written on the host through ..');
  assert.equal(await sb.files.read(mark), 'x', 'the file is in the sandbox');
  assert.equal(await sb.files.read(mark + '-dots'), 'y');
});

test('the API key and the envd access token are required', async () => {
  await assert.rejects(Sandbox.create(template, { apiKey: 'wrong-key-wrong-key' }), (e) => e instanceof AuthenticationError);
  const res = await fetch(process.env.E2B_SANDBOX_URL + '/process.Process/List', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': sb.sandboxId },
    body: '{}',
  });
  assert.equal(res.status, 401);
});

test('setTimeout: the sandbox is killed when its timeout passes', async () => {
  const s2 = await Sandbox.create(template, { timeoutMs: 120000 });
  try {
    assert.equal(await s2.isRunning(), true);
    await s2.setTimeout(1500);
    const info = await s2.getInfo();
    assert.ok(info.endAt.getTime() - Date.now() < 2000, 'endAt moved to the new timeout');
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(await s2.isRunning(), true, 'still running before its timeout');
    let running = true;
    for (let i = 0; i < 50 && running; i++) {
      await new Promise((r) => setTimeout(r, 100));
      running = await s2.isRunning();
    }
    assert.equal(running, false, 'gone after its timeout');
    await assert.rejects(Sandbox.getInfo(s2.sandboxId), /not found/);
  } finally {
    await s2.kill().catch(() => {});
  }
});

test('kill() ends a sandbox', async () => {
  const s3 = await Sandbox.create(template);
  assert.equal(await s3.kill(), true);
  assert.equal(await s3.isRunning(), false);
  assert.equal(await Sandbox.kill(s3.sandboxId), false, 'a second kill finds nothing');
  const listed = await Sandbox.list().nextItems();
  assert.ok(!listed.some((s) => s.sandboxId === s3.sandboxId));
});
