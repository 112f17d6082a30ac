// A Node terminal program for the prompt tests, drawn the two ways Node
// agents draw:
//
//   node app.js inline      incremental frames on the main screen, as
//                           ink/log-update do: each frame erases the last
//                           one with relative cursor moves (ESC[2K ESC[1A)
//                           and writes itself below where it started
//   node app.js fullscreen  the alternate screen, drawn as full-screen
//                           renderers draw: only the lines that changed
//                           are rewritten (absolute moves), and the whole
//                           screen only when the size really changes (Node
//                           emits 'resize' only then)
//
// Keys: w writes $TUI_TARGET/<n>.txt; s spawns a child (stdio through
// libuv's socketpairs) that writes $TUI_TARGET/child<n>.txt; x spawns
// `bash -c 'rm -rf nothing-<n>; exit 3'`; q quits. The screen shows only
// "ok" or "refused" for each operation, so a run without permwrap where
// the target is missing draws the same screen as a denied run under it.
// What the children wrote on stderr and the error codes go to $TUI_LOG,
// one JSON line per operation, never to the screen.
'use strict';
const fs = require('fs');
const { spawn } = require('child_process');

const mode = process.argv[2] === 'fullscreen' ? 'fullscreen' : 'inline';
const target = process.env.TUI_TARGET || 'ASK';
const logPath = process.env.TUI_LOG || '/dev/null';
const out = process.stdout;
let ops = [];
let n = 0;
let prevLines = 0;
let prevFrame = null; // fullscreen: what is on screen, row by row
let busy = false;

function frame() {
  const spin = '|/-\\'[n % 4];
  const lines = [`APP node-${mode}`, `${spin} Working… ${n} operations`];
  for (const o of ops.slice(-8)) lines.push(`  op ${o.n}: ${o.what} ${o.ok ? 'ok' : 'refused'}`);
  lines.push(busy ? 'waiting…' : 'keys: w write · s spawn · x refused spawn · q quit');
  return lines;
}

function render(full) {
  const lines = frame();
  if (mode === 'fullscreen') {
    if (full === true || prevFrame === null) {
      out.write('\x1b[H\x1b[2J' + lines.join('\r\n'));
    } else {
      let diff = '';
      const rows = Math.max(lines.length, prevFrame.length);
      for (let i = 0; i < rows; i++) {
        if (lines[i] !== prevFrame[i]) diff += `\x1b[${i + 1};1H\x1b[2K` + (lines[i] || '');
      }
      out.write(diff);
    }
    prevFrame = lines;
    return;
  }
  // log-update: erase the previous frame line by line, upwards.
  let erase = '';
  for (let i = 0; i < prevLines; i++) erase += '\x1b[2K' + (i < prevLines - 1 ? '\x1b[1A' : '');
  if (prevLines > 0) erase += '\x1b[G';
  out.write(erase + lines.join('\n') + '\n');
  prevLines = lines.length + 1;
}

function record(o, extra) {
  fs.appendFileSync(logPath, JSON.stringify(Object.assign({ n: o.n, what: o.what, ok: o.ok }, extra)) + '\n');
}

function child(what, cmd, args) {
  const o = { n: ++n, what, ok: false };
  busy = true;
  render();
  const c = spawn(cmd, args);
  let stderr = '';
  let spawnError = '';
  c.stderr.on('data', (d) => { stderr += d; });
  c.on('error', (e) => { spawnError = e.code || String(e); });
  c.on('close', (code, signal) => {
    o.ok = code === 0 && !spawnError;
    ops.push(o);
    busy = false;
    record(o, { code, signal, spawnError, stderr });
    render();
  });
}

function key(k) {
  if (busy) return;
  if (k === 'q') {
    if (mode === 'fullscreen') out.write('\x1b[?1049l');
    out.write('\x1b[?25h');
    process.stdin.setRawMode(false);
    process.exit(0);
  }
  if (k === 'w') {
    const o = { n: ++n, what: 'write', ok: false };
    let code = '';
    try {
      fs.writeFileSync(`${target}/${o.n}.txt`, 'x');
      o.ok = true;
    } catch (e) {
      code = e.code;
    }
    ops.push(o);
    record(o, { code });
    render();
  } else if (k === 's') {
    child('child', process.execPath, ['-e', `require('fs').writeFileSync(${JSON.stringify(target + '/child')} + process.argv[1] + '.txt', 'x')`, String(n + 1)]);
  } else if (k === 'x') {
    child('spawn', '/bin/bash', ['-c', `rm -rf nothing-${n + 1}; exit 3`]);
  }
}

process.stdin.setRawMode(true);
process.stdin.on('data', (d) => { for (const k of d.toString()) key(k); });
out.on('resize', () => render(true));
if (mode === 'fullscreen') out.write('\x1b[?1049h');
out.write('\x1b[?25l');
render();
