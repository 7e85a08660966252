'use strict';
// Loaded into every Node process of a command a test runs (NODE_OPTIONS=--require): each TCP
// connection the process or its Node children try is written to NETGUARD_LOG and refused
// before it leaves the machine. Unix sockets and the pipes of child processes are not TCP
// and pass. See netguard.go.
const fs = require('fs');
const net = require('net');

const log = process.env.NETGUARD_LOG;
const connect = net.Socket.prototype.connect;

// Each process says when it starts and ends, so the test can wait for detached ones (the CDK
// CLI's telemetry sender outlives the CLI) before it reads the log.
const procs = `${log}.procs`;
const script = process.argv.slice(1).map((a) => a.split('/').slice(-2).join('/')).join(' ');
try {
  fs.appendFileSync(procs, `start ${process.pid} ${script}\n`);
} catch (e) {
  // Without the log the test cannot wait for this process; its connections are still refused.
}
// A child is written down by its parent as soon as it exists: a detached child may still be
// loading this hook when its parent exits and the test looks.
const { ChildProcess } = require('child_process');
const spawn = ChildProcess.prototype.spawn;
ChildProcess.prototype.spawn = function (...args) {
  const ret = spawn.apply(this, args);
  if (this.pid !== undefined) {
    try {
      fs.appendFileSync(procs, `start ${this.pid} (a child of ${process.pid})\n`);
    } catch (e) {
      // as above
    }
  }
  return ret;
};
process.on('exit', () => {
  try {
    fs.appendFileSync(procs, `exit ${process.pid}\n`);
  } catch (e) {
    // as above
  }
});

net.Socket.prototype.connect = function (...args) {
  let o = args[0];
  if (Array.isArray(o)) o = o[0]; // net.connect passes its normalized arguments
  let host, port;
  if (o !== null && typeof o === 'object') {
    if (o.path) return connect.apply(this, args);
    host = o.host;
    port = o.port;
  } else if (typeof o === 'string' && isNaN(Number(o))) {
    return connect.apply(this, args); // a path
  } else {
    port = o;
    host = typeof args[1] === 'string' ? args[1] : undefined;
  }
  const target = `${host || 'localhost'}:${port}`;
  try {
    fs.appendFileSync(log, `${target} from node ${script}\n`);
  } catch (e) {
    // The log is the test's; without it the attempt is still refused.
  }
  const err = Object.assign(new Error(`netguard: ${target} refused: a test's command contacts no endpoint`), { code: 'ECONNREFUSED' });
  process.nextTick(() => this.destroy(err));
  return this;
};
