// dockerode against sbx serve (tests/integration/test_serve.sh runs it when
// dockerode can be required): create/start/exec/wait/remove, as harnesses do.
// Usage: NODE_PATH=DIR/node_modules node serve_dockerode.js SOCKET IMAGE
const Docker = require('dockerode');
const docker = new Docker({socketPath: process.argv[2]});
const image = process.argv[3];
let fails = 0;
const check = (desc, ok) => { console.log((ok ? 'ok   ' : 'FAIL ') + desc); if (!ok) fails++; };
(async () => {
  const c = await docker.createContainer({Image: image, Cmd: ['tail', '-f', '/dev/null'], Labels: {t: 'node'}});
  await c.start();
  check('dockerode: started', (await c.inspect()).State.Running === true);
  const ex = await c.exec({Cmd: ['sh', '-c', 'echo node-out; echo node-err >&2; exit 6'], AttachStdout: true, AttachStderr: true});
  const stream = await ex.start({hijack: true, stdin: false});
  let out = '', err = '';
  const {Writable} = require('stream');
  const sink = (f) => new Writable({write(chunk, enc, cb) { f(chunk.toString()); cb(); }});
  docker.modem.demuxStream(stream, sink((s) => { out += s; }), sink((s) => { err += s; }));
  await new Promise((r) => stream.on('end', r));
  check('dockerode: exec stdout ' + JSON.stringify(out), out === 'node-out\n');
  check('dockerode: exec stderr ' + JSON.stringify(err), err === 'node-err\n');
  check('dockerode: exec exit code 6', (await ex.inspect()).ExitCode === 6);
  await c.kill();
  const w = await c.wait();
  check('dockerode: wait after kill gives 137 (' + w.StatusCode + ')', w.StatusCode === 137);
  await c.remove({force: true});
  const left = await docker.listContainers({all: true, filters: {label: ['t=node']}});
  check('dockerode: removed', left.length === 0);
  process.exit(fails ? 1 : 0);
})().catch((e) => { console.log('FAIL dockerode: ' + e); process.exit(1); });
