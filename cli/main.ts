// The rc command. Kept lean on purpose: agents call it in loops, so it loads
// nothing but Node's own modules and this one bundled file.
import { EXIT } from '../core/exit-codes';
import { Client } from './client';
import { loadCliConfig } from './config';
import { CliExit, err, exitWhenFlushed, out } from './output';
import { admin } from './commands/admin';
import { describe } from './commands/describe';
import { devices } from './commands/devices';
import { kill } from './commands/kill';
import { attach, jobs, logs, ps } from './commands/jobs';
import { run } from './commands/run';
import { hold, release } from './commands/hold';
import { cp } from './commands/cp';
import { wait } from './commands/wait';
import { usage } from './commands/usage';
import { HELP, helpOf, wantsHelp } from './help';

declare const RC_VERSION: string;

type Command = (client: Client, args: readonly string[]) => Promise<number>;
const COMMANDS: Record<string, Command> = { run, hold, release, cp, devices, describe, kill, ps, jobs, logs, attach, wait, usage, admin };

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === '--version' || name === '-V') {
    out(`rc ${RC_VERSION}\n`);
    return EXIT.ok;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    out(HELP);
    return EXIT.ok;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    err(`rc: usage: unknown command ${name}; rc --help lists the commands\n`);
    return EXIT.usage;
  }
  // --help anywhere among the flags (before `--`; for run, before its command) needs no controller.
  const help = wantsHelp(name, args);
  if (help !== null) {
    out(helpOf(help));
    return EXIT.ok;
  }
  return command(new Client(loadCliConfig()), args);
}

main(process.argv.slice(2)).then(exitWhenFlushed, (e: unknown) => {
  if (e instanceof CliExit) {
    if (e.message) err(`${e.message}\n`);
    return exitWhenFlushed(e.exitCode);
  }
  err(`rc: internal: ${e instanceof Error ? e.message : String(e)}\n`);
  exitWhenFlushed(EXIT.error);
});
