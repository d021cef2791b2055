// The rc command. Kept lean on purpose: agents call it in loops, so it loads
// nothing but Node's own modules and this one bundled file.
import { EXIT } from '../core/exit-codes';
import { Client } from './client';
import { loadCliConfig } from './config';
import { CliExit, errorLine, exitWhenFlushed, out, setJsonOutput, tellExit } from './output';
import { asksJson } from './flags';
import { HELP, helpOf, wantsHelp } from './help';
import { versionLine } from './build-info';

type Command = (client: Client, args: readonly string[]) => Promise<number>;
// Each command's module is loaded when it runs (esbuild bundles an import() as a module whose body runs at the first one): an agent's rc ps does not pay for rc admin's code.
const COMMANDS: Record<string, () => Promise<Command>> = {
  run: async () => (await import('./commands/run')).run,
  hold: async () => (await import('./commands/hold')).hold,
  release: async () => (await import('./commands/hold')).release,
  cp: async () => (await import('./commands/cp')).cp,
  devices: async () => (await import('./commands/devices')).devices,
  describe: async () => (await import('./commands/describe')).describe,
  kill: async () => (await import('./commands/kill')).kill,
  ps: async () => (await import('./commands/jobs')).ps,
  jobs: async () => (await import('./commands/jobs')).jobs,
  logs: async () => (await import('./commands/jobs')).logs,
  attach: async () => (await import('./commands/jobs')).attach,
  wait: async () => (await import('./commands/wait')).wait,
  usage: async () => (await import('./commands/usage')).usage,
  offers: async () => (await import('./commands/machines')).offers,
  machines: async () => (await import('./commands/machines')).machines,
  whoami: async () => (await import('./commands/whoami')).whoami,
  mcp: async () => (await import('./commands/mcp')).mcp,
  admin: async () => (await import('./commands/admin')).admin,
};

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === '--version' || name === '-V') {
    out(versionLine());
    return EXIT.ok;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    out(HELP);
    return EXIT.ok;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!load) {
    setJsonOutput(asksJson(args, null));
    errorLine('usage', `unknown command ${name}; rc --help lists the commands`);
    return EXIT.usage;
  }
  // --help anywhere among the flags (before `--`; for run, before its command) needs no controller.
  const help = await wantsHelp(name, args);
  if (help !== null) {
    out(await helpOf(help));
    return EXIT.ok;
  }
  // Before anything can fail: under --json its error is JSON too. rc run's own flags end at its command.
  setJsonOutput(asksJson(args, name === 'run' ? (await import('./commands/run')).RUN_SPECS : null));
  return (await load())(new Client(loadCliConfig()), args);
}

main(process.argv.slice(2)).then(exitWhenFlushed, (e: unknown) => {
  if (e instanceof CliExit) {
    tellExit(e);
    return exitWhenFlushed(e.exitCode);
  }
  errorLine('internal', e instanceof Error ? e.message : String(e));
  exitWhenFlushed(EXIT.error);
});
