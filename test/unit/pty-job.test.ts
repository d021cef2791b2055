// A terminal job on a real pseudo-terminal (node-pty): its input as given, its last output, its exit, and input still queued at its end.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as pty from 'node-pty';
import { guardPtyEnd } from '../../worker/pty-end';
import { PtyJob } from '../../worker/tty';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A PtyJob on this host with nothing around it: what it printed, how it ended, and when. */
function ptyJob(args: string[]): { output: () => string; exit: Promise<{ code: number | null; at: number }>; job: PtyJob } {
  let out = '';
  let resolve!: (e: { code: number | null; at: number }) => void;
  const exit = new Promise<{ code: number | null; at: number }>((r) => {
    resolve = r;
  });
  const job = new PtyJob({
    output: (d) => {
      out += d.toString();
    },
    exit: (code) => resolve({ code, at: Date.now() }),
  });
  job.start({
    file: '/bin/sh',
    args,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    cols: 80,
    rows: 24,
    tree: { signal: async () => {}, reap: async () => [] },
  });
  return { output: () => out, exit, job };
}

test('output still in the terminal when its stream ends early is read to the end, before the exit', async () => {
  // What libuv does on a busy machine: the master says "hung up" as soon as the program closes
  // its side, and a short read plus "hung up" is taken as the end of the stream, while the
  // program's last writes are still on their way. Here the stream stops reading, then ends.
  const p = pty.spawn('/bin/sh', ['-c', 'sleep 0.3; printf "last-%s\\n" $((6*7)); exit 3'], {
    cols: 80,
    rows: 24,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  guardPtyEnd(p);
  const events: string[] = [];
  p.onData((d) => events.push(`data ${d}`));
  const exited = new Promise<number>((r) =>
    p.onExit(({ exitCode }) => {
      events.push('exit');
      r(exitCode);
    }),
  );
  await sleep(100);
  const sock = (p as unknown as { _socket: { _handle: { readStop(): number }; push(chunk: null): void } })._socket;
  sock._handle.readStop();
  await until(() => !alive(p.pid), 'the program to exit');
  sock.push(null);
  assert.equal(await exited, 3);
  assert.deepEqual(events, ['data last-42\r\n', 'exit']);
});

test('a terminal job reports its exit as soon as its program ends, with all its output', async () => {
  for (let i = 0; i < 3; i++) {
    const started = Date.now();
    const j = ptyJob(['-c', 'printf "done-%s" $((2+3)); exit 5']);
    const { code, at } = await j.exit;
    assert.equal(code, 5);
    assert.equal(j.output(), 'done-5');
    // Not held back by a wait for a close that only a destroy brings (it once took a second more).
    assert.ok(at - started < 700, `the exit came ${at - started} ms after the start`);
  }
});

test('a process the program left behind on the terminal does not hold back its exit', async () => {
  const started = Date.now();
  // setsid: out of the terminal's session, so the shell's exit does not hang it up; it keeps the terminal open.
  const j = ptyJob(['-c', 'setsid sleep 30 & sleep 0.2; echo "left-$!"; exit 0']);
  const { code, at } = await j.exit;
  const pid = Number(/left-(\d+)/.exec(j.output())?.[1]);
  try {
    assert.equal(code, 0);
    assert.ok(pid > 0 && alive(pid), 'the sleep is still running and holds the terminal');
    // node-pty's 200 ms wait for the terminal to close, and no more.
    assert.ok(at - started < 1000, `the exit came ${at - started} ms after the start`);
  } finally {
    if (pid > 0) process.kill(pid, 'SIGKILL');
  }
});

test("a paused terminal still gives its program's last output once the program ends", async () => {
  const j = ptyJob(['-c', 'sleep 0.2; printf "after-pause"; exit 6']);
  j.job.pause();
  const { code } = await j.exit;
  assert.equal(code, 6);
  assert.equal(j.output(), 'after-pause');
});

test('input still queued when a terminal ends is dropped: it never reaches the terminal opened next', async () => {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  // Nothing reads the input: a megabyte stays queued, the terminal refusing it. A process left
  // behind holds the terminal open, so the writes keep being refused rather than failing.
  const first = pty.spawn('/bin/sh', ['-c', 'stty raw -echo; setsid sleep 30 & sleep 0.3; echo "left-$!"; exit 0'], { cols: 80, rows: 24, env });
  let firstOut = '';
  first.onData((d) => {
    firstOut += d;
  });
  // Another terminal opens the moment this one's descriptor is closed, and gets its number.
  let next: pty.IPty | null = null;
  let nextOut = '';
  const sock = (first as unknown as { _socket: { destroy(...args: unknown[]): unknown } })._socket;
  const close = sock.destroy.bind(sock);
  sock.destroy = (...args: unknown[]) => {
    const r = close(...args);
    if (!next) {
      next = pty.spawn('/bin/sh', ['-c', 'stty -echo; head -c 14 | od -An -c; exit 4'], { cols: 80, rows: 24, env });
      guardPtyEnd(next);
      next.onData((d) => {
        nextOut += d;
      });
    }
    return r;
  };
  guardPtyEnd(first);
  first.write('X'.repeat(1024 * 1024));
  await new Promise((r) => first.onExit(r));
  const left = Number(/left-(\d+)/.exec(firstOut)?.[1]);
  try {
    assert.ok(next, 'the next terminal opened');
    const second = next as pty.IPty;
    assert.equal((second as unknown as { _fd: number })._fd, (first as unknown as { _fd: number })._fd, 'it got the same descriptor number');
    const exited = new Promise<number>((r) => second.onExit(({ exitCode }) => r(exitCode)));
    await sleep(300);
    second.write('typed-by-next\n');
    assert.equal(await exited, 4);
    assert.doesNotMatch(nextOut, /X/, nextOut.slice(0, 200));
    assert.match(nextOut, /t\s+y\s+p\s+e\s+d/);
  } finally {
    if (left > 0) process.kill(left, 'SIGKILL');
  }
});

test('input reaches the program byte for byte, UTF-8 or not', async () => {
  const j = ptyJob(['-c', 'stty raw -echo; head -c 5 | od -An -tx1; exit 0']);
  await sleep(200);
  j.job.write(Buffer.from([0xe9, 0xff, 0x41, 0xc3, 0xa9]));
  const { code } = await j.exit;
  assert.equal(code, 0);
  assert.match(j.output(), /e9 ff 41 c3 a9/);
});
