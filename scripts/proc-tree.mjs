// The processes below one, from /proc (each process's parent in its stat):
// what a hung test file still runs (scripts/test.mjs), and the orphans a
// SIGKILLed worker leaves (scripts/bench-queue.mjs), stopped by their pids.
import { readdirSync, readFileSync } from 'node:fs';

/** The processes below `top`, depth first: { pid, depth (0: a child of top), cmd (its command line) }. */
export function descendants(top) {
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      children.set(ppid, [...(children.get(ppid) ?? []), { pid: Number(name), cmd }]);
    } catch {}
  }
  const out = [];
  const walk = (pid, depth) => {
    for (const c of children.get(pid) ?? []) {
      out.push({ ...c, depth });
      walk(c.pid, depth + 1);
    }
  };
  walk(top, 0);
  return out;
}
