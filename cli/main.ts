// The rc command. Kept lean on purpose: agents call it in loops, so it loads
// nothing but Node's own modules and this one bundled file.
import { EXIT } from '../core/exit-codes';
import { Client } from './client';
import { loadCliConfig } from './config';
import { CliExit, err, exitWhenFlushed, out } from './output';
import { ADMIN_HELP, admin } from './commands/admin';
import { DESCRIBE_HELP, describe } from './commands/describe';
import { DEVICES_HELP, devices } from './commands/devices';
import { KILL_HELP, kill } from './commands/kill';
import { ATTACH_HELP, attach, JOBS_HELP, jobs, LOGS_HELP, logs, PS_HELP, ps } from './commands/jobs';
import { RUN_HELP, run } from './commands/run';
import { HOLD_HELP, hold, RELEASE_HELP, release } from './commands/hold';
import { CP_HELP, cp } from './commands/cp';

declare const RC_VERSION: string;

const HELP = `rc: share GPUs through leases

usage: rc <command> [flags]

  run      run a command on a matching device:  rc run --select 'vram>=40G' -- python train.py
           (rc run --select ... --explain shows what would match, without submitting)
  hold     keep a device for several commands, with a TTL:  rc hold --select 'vram>=40G' --ttl 2h
  release  end a hold:  rc release <hold-id>
  cp       copy one file to or from a device's workspace:  rc cp ./train.py host:gpu0:/workspace/
  devices  list devices, their state and holder
  describe one device in full: labels with source and age, the host's usage sheet, recent jobs;
           or one job (by id or --name): its state, command, devices, env names
  ps       what is running and queued now, whose it is, queue positions
  jobs     current and past jobs (--state, --device, --submitter, --json)
  logs     a job's stored output (-f follows it)
  attach   re-stream a running job's output from the beginning
  kill     stop a job you submitted
  admin    operator commands (hosts, tokens)

  rc <command> --help     flags of one command
  rc --version            this CLI's version

Environment: RC_CONTROLLER (controller URL), RC_TOKEN (client token),
RC_SUBMITTER (your name on jobs; default user@host/session).
`;

type Command = (client: Client, args: readonly string[]) => Promise<number>;
const COMMANDS: Record<string, { fn: Command; help: string }> = {
  run: { fn: run, help: RUN_HELP },
  hold: { fn: hold, help: HOLD_HELP },
  release: { fn: release, help: RELEASE_HELP },
  cp: { fn: cp, help: CP_HELP },
  devices: { fn: devices, help: DEVICES_HELP },
  describe: { fn: describe, help: DESCRIBE_HELP },
  kill: { fn: kill, help: KILL_HELP },
  ps: { fn: ps, help: PS_HELP },
  jobs: { fn: jobs, help: JOBS_HELP },
  logs: { fn: logs, help: LOGS_HELP },
  attach: { fn: attach, help: ATTACH_HELP },
  admin: { fn: admin, help: ADMIN_HELP },
};

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
  const command = COMMANDS[name];
  if (!command) {
    err(`rc: usage: unknown command ${name}; rc --help lists the commands\n`);
    return EXIT.usage;
  }
  if (args[0] === '--help' || args[0] === '-h') {
    out(command.help);
    return EXIT.ok;
  }
  return command.fn(new Client(loadCliConfig()), args);
}

main(process.argv.slice(2)).then(exitWhenFlushed, (e: unknown) => {
  if (e instanceof CliExit) {
    if (e.message) err(`${e.message}\n`);
    return exitWhenFlushed(e.exitCode);
  }
  err(`rc: internal: ${e instanceof Error ? e.message : String(e)}\n`);
  exitWhenFlushed(EXIT.error);
});
