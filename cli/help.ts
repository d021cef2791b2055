// Every command's help: `rc --help`, `rc <command> --help`, and an admin
// subcommand's own lines (`rc admin token create --help`). None needs a controller.
import { ADMIN_HELP, adminHelpFor } from './commands/admin';
import { DESCRIBE_HELP } from './commands/describe';
import { DEVICES_HELP } from './commands/devices';
import { KILL_HELP } from './commands/kill';
import { ATTACH_HELP, JOBS_HELP, LOGS_HELP, PS_HELP } from './commands/jobs';
import { RUN_HELP, RUN_SPECS } from './commands/run';
import { parseFlags } from './flags';
import { HOLD_HELP, RELEASE_HELP } from './commands/hold';
import { CP_HELP } from './commands/cp';
import { WAIT_HELP } from './commands/wait';
import { USAGE_HELP } from './commands/usage';

export const HELP = `rc: share GPUs through leases

usage: rc <command> [flags]

  run      run a command on a matching device:  rc run --select 'vram>=40G' -- python train.py
           (--explain shows what would match, without submitting; --detach prints the
           job's id and exits at once; --tty for an interactive terminal)
  wait     block until a job ends and exit with its code:  rc wait <job-id>
  hold     keep a device for several commands, with a TTL:  rc hold --select 'vram>=40G' --ttl 2h
           (rc hold extend <hold-id> --ttl 1h moves its end)
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
  usage    device-hours leased (jobs, terminals, holds) and how many sat idle, by submitter,
           token, host or model:  rc usage --since 7d --by submitter
  admin    operator commands: host add/off/on/rm, hosts, audit, token create/revoke, tokens,
           sheet set/clear, note set, probe, clear (rc admin --help)

  rc <command> --help     flags of one command
  rc --version            this CLI's version

Environment: RC_CONTROLLER (controller URL), RC_TOKEN (client token),
RC_SUBMITTER (your name on jobs; default user@host/session).
`;

const HELPS: Record<string, string> = {
  run: RUN_HELP,
  hold: HOLD_HELP,
  release: RELEASE_HELP,
  cp: CP_HELP,
  devices: DEVICES_HELP,
  describe: DESCRIBE_HELP,
  kill: KILL_HELP,
  ps: PS_HELP,
  jobs: JOBS_HELP,
  logs: LOGS_HELP,
  attach: ATTACH_HELP,
  wait: WAIT_HELP,
  usage: USAGE_HELP,
  admin: ADMIN_HELP,
};

/** The command whose help `--help` asks for (`admin token create`), or null when it asks for none. */
export function wantsHelp(name: string, args: readonly string[]): string | null {
  // rc run's flags are read as rc run reads them: its command starts at its first positional argument, and a flag's value is no command.
  if (name === 'run') return parseFlags('run', args, RUN_SPECS, true).flags.has('help') ? 'run' : null;
  const words = [name];
  for (const a of args) {
    if (a === '--') return null;
    if (a === '--help' || a === '-h') return words.join(' ');
    if (!a.startsWith('-')) words.push(a);
  }
  return null;
}

/** The help of `rc <command>` (a subcommand's: `admin token create`): its command's text, or for admin the lines of that subcommand. */
export function helpOf(command: string): string {
  const [name] = command.split(' ');
  if (name === 'admin' && command !== 'admin') return adminHelpFor(command);
  return (Object.hasOwn(HELPS, name!) ? HELPS[name!] : undefined) ?? HELP;
}
