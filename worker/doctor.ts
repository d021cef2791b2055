// rc-worker doctor: is this host ready to run rc jobs? One row per check,
// ok / n/a / fail, and a non-zero exit when a row fails. Reads the same
// environment as the worker but never stops at a bad value: it reports it.
import { accessSync, constants, readFileSync } from 'node:fs';
import { controllerList } from '../protocol/controllers';
import type { ApiErrorBody } from '../core/errors';
import type { ResponseOf } from '../protocol/routes';
import { loadWorkerConfig, mountDirs } from './config';
import { checkMountDirs } from './job-mounts';
import { cgroupMoveNote } from './job-cgroup';
import { parseNvidiaSmiCsv } from './probes/parse';
import { commandFailure, NVIDIA_SMI_QUERY, runCommand } from './probes/run';

export type RowStatus = 'ok' | 'n/a' | 'fail';
export interface DoctorRow {
  check: string;
  status: RowStatus;
  detail: string;
}

export async function doctor(env: NodeJS.ProcessEnv, print: (line: string) => void): Promise<number> {
  const rows = await doctorRows(env);
  const width = Math.max(...rows.map((r) => r.check.length));
  for (const r of rows) print(`${r.check.padEnd(width)}  ${r.status.padEnd(4)}  ${r.detail}`);
  const failed = rows.filter((r) => r.status === 'fail').length;
  print(failed ? `${failed} check(s) failed` : 'all checks passed');
  return failed ? 1 : 0;
}

export async function doctorRows(env: NodeJS.ProcessEnv): Promise<DoctorRow[]> {
  const rows: DoctorRow[] = [];
  let config: ReturnType<typeof loadWorkerConfig> | null = null;
  try {
    config = loadWorkerConfig(env);
    rows.push({ check: 'config', status: 'ok', detail: `host ${config.RC_HOST_NAME}, runtime ${config.RC_RUNTIME}` });
  } catch (err) {
    rows.push({ check: 'config', status: 'fail', detail: (err as Error).message });
  }
  const runtime = config?.RC_RUNTIME ?? (env.RC_RUNTIME === 'docker' ? 'docker' : 'host');
  const docker = config?.RC_DOCKER ?? env.RC_DOCKER ?? 'docker';
  const image = config?.RC_DOCKER_IMAGE ?? env.RC_DOCKER_IMAGE ?? 'rc-job:stock';
  const run = (file: string, args: string[], timeoutMs = 15_000) => runCommand(file, args, { env, timeoutMs, maxBytes: 256 * 1024 });

  // Docker first: the GPU row needs to know whether containers can be tried.
  let dockerOk = false;
  let imageOk = false;
  if (runtime !== 'docker') {
    rows.push({ check: 'docker', status: 'n/a', detail: 'the host runtime runs jobs without Docker (RC_RUNTIME=docker to use it)' });
    rows.push({ check: 'image', status: 'n/a', detail: 'no image with the host runtime' });
  } else {
    const v = await run(docker, ['version', '--format', '{{.Server.Version}}']);
    const why = commandFailure(v, docker, true);
    dockerOk = !why && v.kind === 'exited';
    rows.push(
      dockerOk && v.kind === 'exited'
        ? { check: 'docker', status: 'ok', detail: `dockerd ${v.stdout.trim()} reachable` }
        : { check: 'docker', status: 'fail', detail: `cannot reach dockerd: ${why}; start it, or check DOCKER_HOST and this user's access to its socket` },
    );
    if (!dockerOk) {
      rows.push({ check: 'image', status: 'fail', detail: `${image}: not checked, Docker is not reachable` });
    } else {
      const i = await run(docker, ['image', 'inspect', '--format', '{{.Id}}', image]);
      imageOk = i.kind === 'exited' && i.code === 0;
      rows.push(
        imageOk && i.kind === 'exited'
          ? { check: 'image', status: 'ok', detail: `${image} present (${i.stdout.trim().slice(0, 19)})` }
          : {
              check: 'image',
              status: 'fail',
              detail: `${image} is not present: build it with docker/worker-image/build.sh --tag ${image} (no registry needed) or docker load it, or set RC_DOCKER_IMAGE`,
            },
      );
    }
  }

  rows.push(await gpuRow(run, runtime, docker, image, dockerOk && imageOk));
  if (runtime === 'host') {
    let mountinfo = '';
    try {
      mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
    } catch {
      /* not Linux */
    }
    rows.push({ check: 'cgroups', status: mountinfo ? 'ok' : 'n/a', detail: mountinfo ? cgroupMoveNote(mountinfo) : 'no /proc/self/mountinfo (not Linux)' });
  }
  rows.push(...(await controllerRows(env)));
  if (config) {
    try {
      accessSync(config.RC_WORKSPACE, constants.W_OK);
      rows.push({ check: 'workspace', status: 'ok', detail: `${config.RC_WORKSPACE} writable` });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      rows.push(
        code === 'ENOENT'
          ? { check: 'workspace', status: 'ok', detail: `${config.RC_WORKSPACE} does not exist yet; the worker creates it` }
          : { check: 'workspace', status: 'fail', detail: `${config.RC_WORKSPACE} is not writable (${code})` },
      );
    }
    const dirs = mountDirs(config);
    const problems = checkMountDirs(dirs, config.RC_WORKSPACE, false);
    rows.push(
      problems.length
        ? { check: 'mounts', status: 'fail', detail: problems.join('; ') }
        : {
            check: 'mounts',
            status: 'ok',
            detail: `scratch in ${dirs.scratch}; shared ${dirs.shared ?? 'none (RC_SHARED_DIR unset)'}; secrets ${dirs.secrets ?? 'none (RC_SECRETS_DIR unset)'}`,
          },
    );
  }
  return rows;
}

type Run = (file: string, args: string[], timeoutMs?: number) => ReturnType<typeof runCommand>;

/** n/a without nvidia-smi (a CPU host is not a failure); ok when the GPUs answer and, with Docker, reach a container. */
async function gpuRow(run: Run, runtime: string, docker: string, image: string, canTryContainer: boolean): Promise<DoctorRow> {
  const q = await run('nvidia-smi', NVIDIA_SMI_QUERY);
  if (q.kind === 'not-started' && q.code === 'ENOENT') return { check: 'gpu', status: 'n/a', detail: 'no nvidia-smi on PATH: a CPU host (jobs get CPU slots)' };
  const why = commandFailure(q, 'nvidia-smi', true);
  if (why || q.kind !== 'exited') return { check: 'gpu', status: 'fail', detail: `${why}; check the NVIDIA driver` };
  const gpus = parseNvidiaSmiCsv(q.stdout);
  if (!gpus.length) return { check: 'gpu', status: 'fail', detail: 'nvidia-smi lists no GPU; check the driver (nvidia-smi -L)' };
  const names = `${gpus.length} GPU(s): ${[...new Set(gpus.map((g) => g.labels.find((l) => l.key === 'gpu_name')?.value))].join(', ')}`;
  if (runtime !== 'docker') return { check: 'gpu', status: 'ok', detail: `${names} (host runtime: jobs use them directly)` };
  if (!canTryContainer)
    return { check: 'gpu', status: 'ok', detail: `${names}; whether containers get them is not checked (Docker or the image is missing, see above)` };
  const c = await run(docker, ['run', '--rm', '--gpus', 'all', image, 'nvidia-smi', '-L'], 60_000);
  const cwhy = commandFailure(c, 'docker run --gpus all', true);
  if (cwhy)
    return {
      check: 'gpu',
      status: 'fail',
      detail: `${names}, but a container cannot get them (${cwhy}); install nvidia-container-toolkit and enable Docker's nvidia runtime`,
    };
  return { check: 'gpu', status: 'ok', detail: `${names}; containers get them (docker run --gpus all ${image} nvidia-smi -L)` };
}

/** Reachable (any HTTP answer), then whether it accepts RC_HOST_TOKEN as a host credential. */
async function controllerRows(env: NodeJS.ProcessEnv): Promise<DoctorRow[]> {
  // Of several controllers, the first: they share one database, so one answers for all.
  const url = controllerList(env.RC_CONTROLLER ?? '')[0];
  if (!url)
    return [
      { check: 'controller', status: 'fail', detail: 'RC_CONTROLLER is not set' },
      { check: 'credential', status: 'fail', detail: 'not checked: no controller' },
    ];
  const started = Date.now();
  let res: Response;
  try {
    res = await fetch(new URL('/api/worker/whoami', url), {
      headers: { authorization: `Bearer ${env.RC_HOST_TOKEN ?? ''}` },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return [
      { check: 'controller', status: 'fail', detail: `cannot reach ${url}: ${cause?.code ?? cause?.message ?? (err as Error).message}` },
      { check: 'credential', status: 'fail', detail: 'not checked: the controller is unreachable' },
    ];
  }
  const ms = Date.now() - started;
  const body = (await res.json().catch(() => null)) as Partial<ResponseOf<'GET /api/worker/whoami'> & ApiErrorBody> | null;
  const reached: DoctorRow = { check: 'controller', status: 'ok', detail: `${url} answered in ${ms} ms` };
  if (res.ok && body?.host) return [reached, { check: 'credential', status: 'ok', detail: `RC_HOST_TOKEN is the credential of host ${body.host}` }];
  if (!env.RC_HOST_TOKEN) return [reached, { check: 'credential', status: 'fail', detail: 'RC_HOST_TOKEN is not set: rc admin host add <name> prints one' }];
  return [
    reached,
    {
      check: 'credential',
      status: 'fail',
      detail: `the controller refused RC_HOST_TOKEN (${res.status}: ${body?.error?.message ?? 'no reason given'}); ask the operator for a new one (rc admin host add)`,
    },
  ];
}
