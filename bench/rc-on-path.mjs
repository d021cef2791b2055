// `rc` as the README now tells a newcomer to run it (issue 36): the checkout's
// node_modules/.bin on the PATH, then `rc --version` and `rc run -- true`,
// against `npx rc …` in the checkout, which the README used before. Run in
// turns (so a noisy moment weighs on all alike), each with and without
// NODE_EXTRA_CA_CERTS where it is set (Node then loads extra CA certificates
// at every start, and npx is Node too), against a throw-away controller and
// its local worker. The commands are exec'd as a shell would after the export
// line: no shell in the timing.
//   npm run bench:path [-- runs]   (default 20 runs each)
import { spawnSync } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { report, root, startFleet } from '../scripts/bench-fleet.mjs';

const runs = Number(process.argv[2] ?? 20);
const fleet = await startFleet({ localWorker: true });
try {
  // The README's export line; and a PATH without it, where only npx finds rc (npm adds the bin folder itself).
  const bare = (process.env.PATH ?? '').split(delimiter).filter((d) => d && !d.endsWith(join('node_modules', '.bin')));
  const base = { ...process.env, PATH: bare.join(delimiter), RC_CONTROLLER: fleet.controller, RC_TOKEN: fleet.clientToken, RC_SUBMITTER: 'bench' };
  const onPath = { ...base, PATH: [join(root, 'node_modules', '.bin'), ...bare].join(delimiter) };
  const noCa = (e) => {
    const c = { ...e };
    delete c.NODE_EXTRA_CA_CERTS;
    return c;
  };
  const variants = process.env.NODE_EXTRA_CA_CERTS
    ? [
        ['', (e) => e],
        [' (no NODE_EXTRA_CA_CERTS)', noCa],
      ]
    : [['', (e) => e]];
  const cases = variants.flatMap(([tag, v]) =>
    [['--version'], ['run', '--', 'true']].flatMap((args) => [
      { name: `rc ${args.join(' ')}${tag}`, cmd: 'rc', args, env: v(onPath) },
      { name: `npx rc ${args.join(' ')}${tag}`, cmd: 'npx', args: ['rc', ...args], env: v(base) },
    ]),
  );
  const times = cases.map(() => []);
  for (let i = 0; i <= runs; i++)
    cases.forEach((c, j) => {
      const t = performance.now();
      const r = spawnSync(c.cmd, c.args, { cwd: root, env: c.env, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${c.name} failed (${r.status}): ${r.stderr}${r.error ?? ''}`);
      if (i > 0) times[j].push(performance.now() - t);
    });
  console.log(`machine: ${process.env.NODE_EXTRA_CA_CERTS ? 'NODE_EXTRA_CA_CERTS is set' : 'no NODE_EXTRA_CA_CERTS'}; ${runs} runs each, in turns`);
  for (const [j, c] of cases.entries()) report(c.name, times[j]);
} finally {
  await fleet.stop();
}
