// The local provider: each machine is a worker container on this machine's
// Docker (through dockerode, never the docker CLI's text). The container runs
// the stock job image with this checkout's built worker, its node_modules and
// the node binary bind-mounted read-only, on the host network (so it reaches a
// controller on 127.0.0.1), and a fake nvidia-smi of the offer's GPUs on its
// PATH: it joins the controller as a host with the key launch() is given.
// Its prices are a table in its config, so every offer is simulated.
import Docker from 'dockerode';
import { ROOT } from '../paths';
import { matchesQuery } from '../../core/machine-fit';
import type { LocalProviderConfig } from './local-config';
import { type InstanceStatus, type LaunchSpec, type Offer, type OfferQuery, type Provider, ProviderError } from './provider';

const NODE = '/usr/local/bin/node';

/** A docker error's HTTP status (404: no such container). */
const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;

/** nvidia-smi as the worker reads it (the formats of test/helpers/fake-nvidia-smi.ts), for `count` GPUs of `model`. */
export function fakeNvidiaSmi(name: string, model: string, count: number, vramGiB: number): string {
  const memMiB = Math.round(vramGiB * 1024);
  const rows = Array.from({ length: count }, (_, i) => {
    const uuid = `GPU-${name.slice(-8).padStart(8, '0')}-0000-4000-8000-${String(i).padStart(12, '0')}`;
    return {
      csv: `${i}, ${uuid}, NVIDIA ${model}, ${memMiB}, 550.54.15`,
      sample: `${i}, ${memMiB}, 0, 0, NVIDIA ${model}`,
      list: `GPU ${i}: NVIDIA ${model} (UUID: ${uuid})`,
    };
  });
  return [
    '#!/bin/sh',
    'case "$*" in',
    `  *--query-gpu=index,uuid,name,memory.total,driver_version*) printf '%s\\n' ${rows.map((r) => `'${r.csv}'`).join(' ')} ;;`,
    `  *--query-gpu=index,memory.total,memory.used,utilization.gpu,name*) printf '%s\\n' ${rows.map((r) => `'${r.sample}'`).join(' ')} ;;`,
    '  *--query-gpu=*) exit 6 ;;',
    '  *--query-compute-apps=*) true ;;',
    // What a job that looks at its GPUs runs first.
    `  -L) printf '%s\\n' ${rows.map((r) => `'${r.list}'`).join(' ')} ;;`,
    "  *) echo '| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |' ;;",
    'esac',
    '',
  ].join('\n');
}

export class LocalProvider implements Provider {
  readonly account = 'local';
  readonly prefix: string;
  private readonly docker: Docker;
  /** Spot machines taken back (their containers removed): describe says preempted, not gone, while this process lives. */
  private readonly takenBack = new Set<string>();

  constructor(
    private readonly config: LocalProviderConfig,
    docker: Docker = new Docker(),
  ) {
    this.prefix = config.prefix;
    this.docker = docker;
  }

  async offers(query: OfferQuery): Promise<Offer[]> {
    return this.config.offers
      .map((o): Offer => ({ ...o, account: this.account, simulated: true }))
      .filter((o) => matchesQuery(o, query))
      .sort((a, b) => a.pricePerHour - b.pricePerHour);
  }

  async launch(spec: LaunchSpec): Promise<void> {
    const { offer, name } = spec;
    if (!name.startsWith(`${this.prefix}-`)) throw new ProviderError('failed', `${name} does not carry this account's prefix ${this.prefix}-`);
    if (this.config.noCapacity.includes(offer.offerId)) throw new ProviderError('no_capacity', `local: no capacity for ${offer.offerId} (noCapacity)`);
    if (this.config.failLaunch.includes(offer.offerId)) throw new ProviderError('failed', `local: the launch of ${offer.offerId} failed (failLaunch)`);
    const smi = offer.gpuModel && offer.gpuCount > 0 ? fakeNvidiaSmi(name, offer.gpuModel, offer.gpuCount, offer.vramGiB) : '';
    // The fake nvidia-smi is written where the worker's PATH finds it, then the worker replaces the shell.
    const start = [
      'set -e',
      'mkdir -p /opt/rc-smi /tmp/rc/ws /tmp/rc/state',
      smi ? `printf '%s' "$RC_FAKE_SMI" > /opt/rc-smi/nvidia-smi && chmod 755 /opt/rc-smi/nvidia-smi` : 'true',
      `exec ${NODE} ${ROOT}/dist/worker.js`,
    ].join('\n');
    try {
      const container = await this.docker.createContainer({
        name,
        Image: this.config.image,
        Cmd: ['sh', '-c', start],
        Env: [
          `PATH=/opt/rc-smi:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
          `RC_CONTROLLER=${spec.controllerUrl}`,
          `RC_HOST_TOKEN=${spec.joinKey}`,
          `RC_HOST_NAME=${name}`,
          `RC_WORKSPACE=/tmp/rc/ws`,
          `RC_STATE_DIR=/tmp/rc/state`,
          `RC_FAKE_DEVICES=${Math.max(1, Math.min(64, offer.cpus))}`,
          `RC_FAKE_SMI=${smi}`,
        ],
        Labels: { 'rc.account': this.account, 'rc.offer': offer.offerId, 'rc.spot': offer.spot ? '1' : '0' },
        HostConfig: {
          NetworkMode: 'host',
          Binds: [`${ROOT}:${ROOT}:ro`, `${process.execPath}:${NODE}:ro`],
        },
      });
      await container.start();
    } catch (err) {
      // Idempotent by name: a second launch of one instance finds it made.
      if (statusOf(err) !== 409) throw new ProviderError('failed', `local: docker refused ${name}: ${(err as Error).message}`);
    }
    if (this.config.errorAfterCreate.includes(offer.offerId))
      throw new ProviderError('failed', `local: ${name} was created but the launch reported an error (errorAfterCreate)`);
    if (this.config.launchDelayMs) await new Promise((r) => setTimeout(r, this.config.launchDelayMs));
  }

  async describe(names: readonly string[]): Promise<InstanceStatus[]> {
    const out: InstanceStatus[] = [];
    for (const name of names) {
      if (this.takenBack.has(name)) {
        out.push({ name, state: 'preempted' });
        continue;
      }
      let info: Docker.ContainerInspectInfo;
      try {
        info = await this.docker.getContainer(name).inspect();
      } catch (err) {
        if (statusOf(err) === 404) {
          out.push({ name, state: 'gone' });
          continue;
        }
        throw new ProviderError('failed', `local: cannot inspect ${name}: ${(err as Error).message}`);
      }
      const spot = info.Config.Labels?.['rc.spot'] === '1';
      const started = Date.parse(info.State.StartedAt);
      const mayTakeBack = this.config.spotTakeBacks === null || this.takenBack.size < this.config.spotTakeBacks;
      if (spot && mayTakeBack && this.config.spotLifetimeMs !== null && info.State.Running && Date.now() - started >= this.config.spotLifetimeMs) {
        await this.terminate(name);
        this.takenBack.add(name);
        out.push({ name, state: 'preempted' });
        continue;
      }
      out.push({ name, state: info.State.Running ? 'running' : info.State.Status === 'created' || info.State.Restarting ? 'pending' : 'gone' });
    }
    return out;
  }

  async terminate(name: string): Promise<'gone' | 'pending'> {
    try {
      await this.docker.getContainer(name).remove({ force: true });
    } catch (err) {
      // Already gone counts as gone; 409: its removal is under way.
      if (statusOf(err) === 409) return 'pending';
      if (statusOf(err) !== 404) throw new ProviderError('failed', `local: cannot remove ${name}: ${(err as Error).message}`);
    }
    return 'gone';
  }

  async list(prefix: string): Promise<string[]> {
    // Docker's name filter matches anywhere in the name: the prefix is checked here too.
    const found = await this.docker.listContainers({ all: true, filters: { name: [prefix] } });
    return found.flatMap((c) => c.Names.map((n) => n.replace(/^\//, ''))).filter((n) => n.startsWith(prefix));
  }
}
