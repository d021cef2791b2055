// Docker's own failures to start a job (no such cwd, no such command, a
// container gone, an image without the command), as one line of rc's with
// rc's exit code, in place of docker's words on the job's stderr.
import { dockerError } from './docker-cli';

/** Exit code of a job that could not be started because of Docker (docker's own code for that). */
export const DOCKER_FAILED = 125;

/** `docker exec`'s own failure (no such cwd, no such command) as one line, with rc's exit code. */
export function translateExecError(held: string, code: number | null, cwd: string, command: string, container: string): { line: string; code: number } {
  const text = held.replace(/\s+/g, ' ').trim();
  if (/chdir to cwd/i.test(text)) {
    return { line: `rc: the working directory ${cwd} does not exist in the container ${container}\n`, code: 126 };
  }
  if (/executable file not found|exec: .*no such file or directory/i.test(text)) {
    return { line: `rc: ${command}: command not found in the container ${container}\n`, code: 127 };
  }
  if (/permission denied/i.test(text)) {
    return { line: `rc: ${command}: permission denied in the container ${container}\n`, code: 126 };
  }
  if (/is not running|No such container/i.test(text)) {
    return { line: `rc: the container ${container} stopped before the job could start in it\n`, code: DOCKER_FAILED };
  }
  const why = text.replace(/^OCI runtime exec failed: (exec failed: )?(unable to start container process: )?/i, '').replace(/: unknown$/, '');
  return { line: `rc: cannot start ${command} in the container ${container}: ${why}\n`, code: code ?? DOCKER_FAILED };
}

/** `docker run`'s own failure for a one-off container as one line (its exit code stays docker's). */
export function translateRunError(held: string, command: string, image: string): string {
  return /FATAL tini.*exec .* failed: No such file/.test(held)
    ? `rc: ${command}: command not found in the image ${image}\n`
    : `rc: cannot run the job in a container: ${dockerError(held)}\n`;
}
