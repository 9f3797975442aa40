// stripe-node's webhook verification, timed in a loop: a peer of the ingest benchmark
// (functions/ingest/benches/sidebyside.rs). Reads commands on stdin, one per line:
//   version               the library's version
//   load <label> <file>   the payload (JSON: id, body, header, secret) of one event size -> "ok"
//   run <label> <n>       n calls of stripe.webhooks.constructEvent on it -> elapsed ns
// The library comes from the folder `bench/peers/install.sh` fills (NODE_PATH).
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const Stripe = require('stripe');

const stripe = new Stripe('sk_test_bench_not_used');
const DAY = 86400;
const payloads = {};

function answer(text) {
  process.stdout.write(`${text}\n`);
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const [cmd, label, arg] = line.trim().split(' ');
  if (cmd === 'version') {
    // The package's exports hide package.json from require(): read it from its folder.
    const dir = path.dirname(require.resolve('stripe'));
    let version = 'unknown';
    for (let d = dir; d !== path.dirname(d); d = path.dirname(d)) {
      const file = path.join(d, 'package.json');
      if (fs.existsSync(file)) {
        const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
        if (pkg.name === 'stripe') {
          version = pkg.version;
          break;
        }
      }
    }
    answer(version);
  } else if (cmd === 'load') {
    const p = JSON.parse(fs.readFileSync(arg, 'utf8'));
    // The raw body as an HTTP server hands it over.
    p.raw = Buffer.from(p.body, 'utf8');
    payloads[label] = p;
    answer('ok');
  } else if (cmd === 'run') {
    const p = payloads[label];
    const n = Number(arg);
    let event = null;
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      event = stripe.webhooks.constructEvent(p.raw, p.header, p.secret, DAY);
    }
    const ns = process.hrtime.bigint() - start;
    if (!event || event.id !== p.id) throw new Error('verified the wrong event');
    answer(ns.toString());
  } else if (cmd === 'quit') {
    process.exit(0);
  }
}).on('close', () => process.exit(0));
