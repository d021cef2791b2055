// A docker job's environment, given to `docker exec`/`docker run` without its
// values on the client's command line (anyone on the host can read a
// process's arguments: ps, /proc/<pid>/cmdline). An rc run --env variable is
// passed as `-e KEY`, which docker fills from the client's own environment,
// where the value is set; only the client (the worker's own user) can read
// that. rc's own variables (RC_JOB_ID, CUDA_VISIBLE_DEVICES, …) are no secret
// and stay `-e KEY=VALUE`.
import type { StartJob } from '../protocol/worker';
import { jobEnv } from './host-runtime';
import type { JobPaths } from './job-mounts';

/**
 * Names the docker client itself, the Go runtime or the host's loader may read
 * (where it looks for docker, its daemon, its config, proxies, preloaded
 * libraries): a job's value for one of them must not change how the client
 * runs on the host, so it goes on the command line (-e KEY=VALUE) instead of
 * into the client's environment. docs/agents.md says not to use such names
 * for secrets.
 */
const CLIENT_READS =
  /^(PATH|HOME|USER|SHELL|TERM|TMPDIR|TZ|LD_\w*|DOCKER_\w*|GO[A-Z]*|CGO_\w*|OTEL_\w*|BUILDKIT_\w*|BUILDX_\w*|XDG_\w*|SSL_CERT_(FILE|DIR)|(HTTPS?|NO|ALL|FTP)_PROXY)$/i;

/** Whether the docker client may read this variable itself (its value then goes on the command line). */
export function clientReads(key: string): boolean {
  return CLIENT_READS.test(key);
}

export interface DockerEnv {
  /** -e arguments for docker exec/run: `-e KEY` for --env variables, `-e KEY=VALUE` for rc's own. */
  args: string[];
  /** Set in the docker client's environment (over the worker's own): the values of the `-e KEY` arguments. */
  env: Record<string, string>;
}

/** `paths`: the folders as the job sees them in its container. */
export function dockerEnv(order: StartJob, paths?: JobPaths): DockerEnv {
  const own = new Set(Object.keys(order.env ?? {}));
  const args: string[] = [];
  const env: Record<string, string> = {};
  // PATH, HOME and the like come from the image, not from the worker's host.
  for (const [k, v] of Object.entries(jobEnv(order, {} as NodeJS.ProcessEnv, paths))) {
    // jobEnv set rc's own variables over the job's: a value that is not the job's is rc's.
    if (own.has(k) && order.env?.[k] === v && !clientReads(k)) {
      args.push('-e', k);
      env[k] = v;
    } else {
      args.push('-e', `${k}=${v}`);
    }
  }
  return { args, env };
}

/** The docker client's environment: the worker's own, with the values of the job's `-e KEY` arguments. */
export function clientEnv(dockerEnv: DockerEnv, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  return Object.assign(env, dockerEnv.env);
}
