// Running one docker CLI command to its end: exit code, stdout, stderr, and a
// one-line error a person can read when it failed. Never throws.
import { runCommand } from './probes/run';

export interface DockerResult {
  ok: boolean;
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why it failed, in one line (docker's own error where it printed one); '' when ok. */
  error: string;
}

export interface DockerCallOptions {
  /** Creating a container may pull its image: that can take minutes. */
  timeoutMs?: number;
}

export async function dockerCall(docker: string, args: string[], opts: DockerCallOptions = {}): Promise<DockerResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const r = await runCommand(docker, args, { env: process.env, timeoutMs, maxBytes: 4 * 1024 * 1024 });
  switch (r.kind) {
    case 'exited':
      return {
        ok: r.code === 0,
        code: r.code,
        stdout: r.stdout,
        stderr: r.stderr,
        error: r.code === 0 ? '' : dockerError(r.stderr) || `${docker} ${args[0]} exited ${r.code}`,
      };
    case 'signalled':
      return { ok: false, code: null, stdout: r.stdout, stderr: r.stderr, error: `${docker} ${args[0]} was killed by ${r.signal}` };
    case 'timed-out':
      return { ok: false, code: null, stdout: '', stderr: '', error: `${docker} ${args[0]} did not answer within ${timeoutMs / 1000}s` };
    case 'too-much-output':
      return { ok: false, code: null, stdout: '', stderr: '', error: `${docker} ${args[0]} printed too much` };
    case 'not-started':
      return {
        ok: false,
        code: null,
        stdout: '',
        stderr: '',
        error: r.code === 'ENOENT' ? `the docker CLI (${docker}) is not installed or not on PATH` : `${docker} could not start: ${r.message}`,
      };
  }
}

/**
 * Docker's error in one line. Its stderr carries noise around the error
 * ("Unable to find image ... locally", "Run 'docker run --help'"), and the
 * line that matters says "Error response from daemon" or "Error: ...".
 */
export function dockerError(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^Run '.*--help'/.test(l) && !/^See '.*--help'/.test(l));
  const main = lines.find((l) => /Error response from daemon|^Error|^docker: /i.test(l)) ?? lines[lines.length - 1] ?? '';
  return main.replace(/^docker: /, '').replace(/\.$/, '');
}
