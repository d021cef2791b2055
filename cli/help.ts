// Every command's help: `rc --help`, `rc <command> --help`, and an admin
// subcommand's own lines (`rc admin token create --help`). None needs a controller.
import { parseFlags } from './flags';

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
           token, team, host or model:  rc usage --since 7d --by submitter
  offers   the cheapest machine shapes the provider accounts offer now:  rc offers --gpu H100
  machines machines rented from providers, with cost so far (rc machines rm <id> deletes one)
  whoami   your token, its team, and its limits with what is left (GPUs, GPU-hours)
  mcp      rc's tools over MCP on stdin/stdout, for an agent harness that starts local
           MCP servers: {"command": "rc", "args": ["mcp"]} (docs/agents.md)
  admin    operator commands: host add/off/on/rm, hosts, audit, token create/set/revoke,
           tokens, team create/set/list, limit set/show, sheet set/clear, note set, probe,
           clear (rc admin --help)

  rc <command> --help     flags of one command
  rc --version            this CLI's version

Environment: RC_CONTROLLER (controller URL), RC_TOKEN (client token),
RC_SUBMITTER (your name on jobs; default user@host/session).
`;

// Loaded when asked for, as the commands are (cli/main.ts).
const HELPS: Record<string, () => Promise<string>> = {
  run: async () => (await import('./commands/run')).RUN_HELP,
  hold: async () => (await import('./commands/hold')).HOLD_HELP,
  release: async () => (await import('./commands/hold')).RELEASE_HELP,
  cp: async () => (await import('./commands/cp')).CP_HELP,
  devices: async () => (await import('./commands/devices')).DEVICES_HELP,
  describe: async () => (await import('./commands/describe')).DESCRIBE_HELP,
  kill: async () => (await import('./commands/kill')).KILL_HELP,
  ps: async () => (await import('./commands/jobs')).PS_HELP,
  jobs: async () => (await import('./commands/jobs')).JOBS_HELP,
  logs: async () => (await import('./commands/jobs')).LOGS_HELP,
  attach: async () => (await import('./commands/jobs')).ATTACH_HELP,
  wait: async () => (await import('./commands/wait')).WAIT_HELP,
  usage: async () => (await import('./commands/usage')).USAGE_HELP,
  offers: async () => (await import('./commands/machines')).OFFERS_HELP,
  machines: async () => (await import('./commands/machines')).MACHINES_HELP,
  whoami: async () => (await import('./commands/whoami')).WHOAMI_HELP,
  mcp: async () => (await import('./commands/mcp')).MCP_HELP,
  admin: async () => (await import('./commands/admin')).ADMIN_HELP,
};

/** The command whose help `--help` asks for (`admin token create`), or null when it asks for none. */
export async function wantsHelp(name: string, args: readonly string[]): Promise<string | null> {
  // rc run's flags are read as rc run reads them: its command starts at its first positional argument, and a flag's value is no command.
  if (name === 'run') return parseFlags('run', args, (await import('./commands/run')).RUN_SPECS, true).flags.has('help') ? 'run' : null;
  const words = [name];
  for (const a of args) {
    if (a === '--') return null;
    if (a === '--help' || a === '-h') return words.join(' ');
    if (!a.startsWith('-')) words.push(a);
  }
  return null;
}

/** The help of `rc <command>` (a subcommand's: `admin token create`): its command's text, or for admin the lines of that subcommand. */
export async function helpOf(command: string): Promise<string> {
  const [name] = command.split(' ');
  if (name === 'admin' && command !== 'admin') return (await import('./commands/admin')).adminHelpFor(command);
  return Object.hasOwn(HELPS, name!) ? HELPS[name!]!() : HELP;
}
