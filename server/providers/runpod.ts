// The RunPod provider (issue 34, item 8): the five calls of provider.ts on
// RunPod's public APIs, with Node's fetch (RunPod keeps no official Node SDK).
// Written from the documentation only: nothing here was ever run against the
// real service (no machine of this project can reach it); docs/operators.md
// says so too. What it relies on, exactly:
//
// REST API v1, https://rest.runpod.io/v1 (https://docs.runpod.io/api-reference),
// every request with `Authorization: Bearer <api key>`:
//   - GET /pods?name=<name>  (https://docs.runpod.io/api-reference/pods/GET/pods):
//     an array of pods; of each we read `id`, `name`, `desiredStatus`
//     (RUNNING | EXITED | TERMINATED). Without `name`: all the account's pods.
//   - POST /pods  (https://docs.runpod.io/api-reference/pods/POST/pods): we send
//     name, imageName, computeType GPU, cloudType SECURE|COMMUNITY, gpuTypeIds
//     [one id], gpuCount, interruptible false, containerDiskInGb, minVCPUPerGPU,
//     minRAMPerGPU, allowedCudaVersions (when asked), env {..}, dockerStartCmd [..].
//   - DELETE /pods/{podId}  (https://docs.runpod.io/api-reference/pods/DELETE/pods/podId).
// GraphQL, https://api.runpod.io/graphql (https://graphql-spec.runpod.io), the
// only documented source of GPU types with prices the v1 REST API lacks:
//   - query gpuTypes { id displayName memoryInGb maxGpuCount secureCloud
//     communityCloud securePrice communityPrice }: prices are $/h per GPU.
//
// Offers: one per GPU type, cloud (Secure, Community) and count (1, 2, 4, 8 up
// to maxGpuCount), at count × that cloud's on-demand price. RunPod's
// interruptible pods are not offered: every offer is `spot: false` (seed 002:
// "RunPod has no spot"), so a --spot query still gets them (spot may compete
// with on-demand; it never excludes it). CPUs, RAM and disk are what launch
// asks RunPod for as minimums (minVCPUPerGPU, minRAMPerGPU, containerDiskInGb).
//
// Errors: HTTP 401/403 → bad_credentials; RunPod's "There are no longer any
// instances available …" (the message its API gives when no machine fits:
// runpod/runpod-python#21, runpod/runpodctl#189) → no_capacity; anything else
// → failed, with a sentence.

import { z } from 'zod';
import { canonicalGpuModel, gpuFamily } from '../../core/gpu-names';
import { type InstanceStatus, type LaunchSpec, type Offer, type OfferQuery, type Provider, ProviderError } from './provider';

export const RUNPOD_REST_URL = 'https://rest.runpod.io/v1';
export const RUNPOD_GRAPHQL_URL = 'https://api.runpod.io/graphql';

// RunPod's own defaults for a pod's minimums (the POST /pods example's values).
const DEFAULT_VCPU_PER_GPU = 2;
const DEFAULT_RAM_PER_GPU_GIB = 8;
const DEFAULT_DISK_GIB = 50;
const GPU_COUNTS = [1, 2, 4, 8];
// allowedCudaVersions' enum in the POST /pods documentation.
const CUDA_VERSIONS = ['13.0', '12.9', '12.8', '12.7', '12.6', '12.5', '12.4', '12.3', '12.2', '12.1', '12.0', '11.8'];

const NO_CAPACITY = /no longer any instances available|no instances (are )?available|not enough free gpus/i;

/** The account's name as --cloud, machines and the audit log spell it: `runpod/<RC_RUNPOD_ACCOUNT>`. */
export function runpodAccount(name: string): string {
  return `runpod/${name}`;
}

export interface RunpodOptions {
  apiKey: string;
  image: string;
  /** The account's name as --cloud writes it after `runpod/`. */
  accountName?: string;
  prefix?: string;
  restUrl?: string;
  graphqlUrl?: string;
}

// What we read of RunPod's answers; other fields pass (RunPod adds fields).
const Pod = z.object({ id: z.string(), name: z.string().nullish(), desiredStatus: z.string().nullish() });
const Pods = z.array(Pod);
type Pod = z.infer<typeof Pod>;
const GpuType = z.object({
  id: z.string(),
  displayName: z.string().nullish(),
  memoryInGb: z.number().nullish(),
  maxGpuCount: z.number().nullish(),
  secureCloud: z.boolean().nullish(),
  communityCloud: z.boolean().nullish(),
  securePrice: z.number().nullish(),
  communityPrice: z.number().nullish(),
});
const GpuTypesAnswer = z.object({ data: z.object({ gpuTypes: z.array(GpuType) }) });

const GPU_TYPES_QUERY = 'query GpuTypes { gpuTypes { id displayName memoryInGb maxGpuCount secureCloud communityCloud securePrice communityPrice } }';

/** What launch() needs back from an offer's id: cloud, GPU type, count. */
function offerIdOf(cloud: 'SECURE' | 'COMMUNITY', gpuTypeId: string, count: number): string {
  return `${cloud}:${count}:${gpuTypeId}`;
}
function parseOfferId(id: string): { cloud: 'SECURE' | 'COMMUNITY'; count: number; gpuTypeId: string } {
  const m = /^(SECURE|COMMUNITY):(\d+):(.+)$/s.exec(id);
  if (!m) throw new ProviderError('failed', `RunPod offer ${id} is not one this provider made (expected SECURE|COMMUNITY:<count>:<gpu type>)`);
  return { cloud: m[1] as 'SECURE' | 'COMMUNITY', count: Number(m[2]), gpuTypeId: m[3]! };
}

function cudaAtLeast(min: string): string[] {
  const [maj, min2] = min.split('.').map(Number);
  return CUDA_VERSIONS.filter((v) => {
    const [a, b] = v.split('.').map(Number);
    return a! > maj! || (a === maj && b! >= (min2 ?? 0));
  });
}

/** Whether a canonical model is one of the asked names (a family name takes each of its models). */
function modelAsked(model: string, asked: readonly string[]): boolean {
  return asked.some((name) => {
    const want = canonicalGpuModel(name);
    return want === model || want === gpuFamily(model);
  });
}

export class RunpodProvider implements Provider {
  readonly account: string;
  readonly prefix: string;
  private readonly rest: string;
  private readonly graphql: string;

  constructor(private readonly o: RunpodOptions) {
    this.account = runpodAccount(o.accountName ?? 'default');
    this.prefix = o.prefix ?? 'rc';
    this.rest = (o.restUrl ?? RUNPOD_REST_URL).replace(/\/+$/, '');
    this.graphql = o.graphqlUrl ?? RUNPOD_GRAPHQL_URL;
  }

  async offers(q: OfferQuery): Promise<Offer[]> {
    const answer = await this.call('POST', this.graphql, { query: GPU_TYPES_QUERY });
    const parsed = GpuTypesAnswer.safeParse(answer);
    if (!parsed.success) throw new ProviderError('failed', 'RunPod answered the gpuTypes query in a shape rc does not know; see the provider log');
    const offers: Offer[] = [];
    for (const t of parsed.data.data.gpuTypes) {
      const model = canonicalGpuModel(t.id);
      const vram = t.memoryInGb ?? 0;
      if (q.gpuModels?.length && !modelAsked(model, q.gpuModels)) continue;
      if (q.minVramGiB !== undefined && vram < q.minVramGiB) continue;
      const clouds: ['SECURE' | 'COMMUNITY', number | null | undefined, boolean | null | undefined][] = [
        ['SECURE', t.securePrice, t.secureCloud],
        ['COMMUNITY', t.communityPrice, t.communityCloud],
      ];
      for (const [cloud, perGpu, available] of clouds) {
        if (!available || !perGpu || perGpu <= 0) continue;
        for (const count of GPU_COUNTS) {
          if (count > (t.maxGpuCount ?? 1) || count < (q.minGpus ?? 1)) continue;
          const price = Math.round(perGpu * count * 10_000) / 10_000;
          if (q.maxPricePerHour !== undefined && price > q.maxPricePerHour) continue;
          offers.push({
            account: this.account,
            offerId: offerIdOf(cloud, t.id, count),
            gpuModel: model,
            gpuCount: count,
            vramGiB: vram,
            // Minimums launch asks for: RunPod places the pod on a machine with at least these.
            cpus: Math.max(DEFAULT_VCPU_PER_GPU * count, q.minCpus ?? 0),
            ramGiB: Math.max(DEFAULT_RAM_PER_GPU_GIB * count, q.minRamGiB ?? 0),
            diskGiB: Math.max(DEFAULT_DISK_GIB, q.minDiskGiB ?? 0),
            cuda: q.minCuda ?? null,
            region: null,
            spot: false,
            pricePerHour: price,
            simulated: false,
          });
        }
      }
    }
    return offers.sort((a, b) => a.pricePerHour - b.pricePerHour);
  }

  async launch(spec: LaunchSpec): Promise<void> {
    // Idempotent by name: a pod already carrying it (a retried launch, a controller restarted mid-call) is that launch.
    if ((await this.podsNamed(spec.name)).length > 0) return;
    const { cloud, count, gpuTypeId } = parseOfferId(spec.offer.offerId);
    const body: Record<string, unknown> = {
      name: spec.name,
      imageName: this.o.image,
      computeType: 'GPU',
      cloudType: cloud,
      gpuTypeIds: [gpuTypeId],
      gpuCount: count,
      interruptible: false,
      containerDiskInGb: Math.ceil(spec.offer.diskGiB),
      minVCPUPerGPU: Math.ceil(spec.offer.cpus / count),
      minRAMPerGPU: Math.ceil(spec.offer.ramGiB / count),
      // The join key travels as the pod's env, not in the command line RunPod shows.
      env: { RC_CONTROLLER_URL: spec.controllerUrl, RC_HOST_TOKEN: spec.joinKey },
      dockerStartCmd: ['sh', '-c', JOIN_SCRIPT],
    };
    if (spec.offer.cuda) body.allowedCudaVersions = cudaAtLeast(spec.offer.cuda);
    await this.call('POST', `${this.rest}/pods`, body);
  }

  async describe(names: readonly string[]): Promise<InstanceStatus[]> {
    const pods = names.length ? await this.allPods() : [];
    return names.map((name) => ({ name, state: stateOf(pods.filter((p) => p.name === name)) }));
  }

  async terminate(name: string): Promise<'gone' | 'pending'> {
    // RunPod allows several pods of one name: every one goes.
    for (const pod of await this.podsNamed(name)) {
      await this.call('DELETE', `${this.rest}/pods/${encodeURIComponent(pod.id)}`, undefined, { goneIsFine: true });
    }
    return (await this.podsNamed(name)).length === 0 ? 'gone' : 'pending';
  }

  async list(prefix: string): Promise<string[]> {
    const names = (await this.allPods()).map((p) => p.name ?? '').filter((n) => n.startsWith(prefix));
    return [...new Set(names)].sort();
  }

  /** Live pods of exactly this name (RunPod's name filter; checked again here, as a filter is no promise). */
  private async podsNamed(name: string): Promise<Pod[]> {
    const pods = await this.pods(`${this.rest}/pods?${new URLSearchParams({ name })}`);
    return pods.filter((p) => p.name === name);
  }

  private allPods(): Promise<Pod[]> {
    return this.pods(`${this.rest}/pods`);
  }

  private async pods(url: string): Promise<Pod[]> {
    const parsed = Pods.safeParse(await this.call('GET', url));
    if (!parsed.success) throw new ProviderError('failed', 'RunPod answered GET /pods in a shape rc does not know (expected an array of pods)');
    // A terminated pod is gone: it runs nothing and costs nothing.
    return parsed.data.filter((p) => p.desiredStatus !== 'TERMINATED');
  }

  private async call(method: string, url: string, body?: unknown, opts: { goneIsFine?: boolean } = {}): Promise<unknown> {
    const what = `RunPod ${method} ${new URL(url).pathname}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${this.o.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new ProviderError('failed', `${what} could not be reached (${(err as Error).message}); check the network and RC_RUNPOD_REST_URL`);
    }
    const text = await res.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // A non-JSON answer: only its status and text say anything.
    }
    const message = errorMessage(json) ?? text.slice(0, 200);
    // GraphQL may answer a bad key with 200 and an error that says so.
    if (res.status === 401 || res.status === 403 || (hasErrors(json) && /unauthori[sz]ed|api key/i.test(message))) {
      throw new ProviderError('bad_credentials', `${what}: RunPod refused the API key (HTTP ${res.status}); check RC_RUNPOD_API_KEY`);
    }
    if (res.status === 404 && opts.goneIsFine) return null;
    if (NO_CAPACITY.test(message) && (!res.ok || hasErrors(json))) {
      throw new ProviderError('no_capacity', `${what}: RunPod has no machine for this offer now (${message})`);
    }
    if (!res.ok || hasErrors(json)) {
      throw new ProviderError('failed', `${what} failed with HTTP ${res.status}: ${message || 'no message'}`);
    }
    return json;
  }
}

// The pod's start-up command: install the worker from the controller with its
// one-time key (the install script's own pins apply), then keep the container
// alive for the worker the script starts in the background (no systemd in a pod).
const JOIN_SCRIPT =
  'curl -fsSL "$RC_CONTROLLER_URL/install.sh" -o /tmp/rc-install.sh && RC_HOST_TOKEN="$RC_HOST_TOKEN" sh /tmp/rc-install.sh && exec sleep infinity';

/** A name's state from its live pods: RUNNING → running, EXITED (stopped without us) → preempted, none → gone, else pending. */
export function stateOf(pods: readonly Pod[]): InstanceStatus['state'] {
  if (pods.length === 0) return 'gone';
  if (pods.some((p) => p.desiredStatus === 'RUNNING')) return 'running';
  // EXITED: the container stopped and nobody asked rc's controller; it still costs its disk, so the controller must delete it.
  if (pods.every((p) => p.desiredStatus === 'EXITED')) return 'preempted';
  return 'pending';
}

function hasErrors(json: unknown): boolean {
  return typeof json === 'object' && json !== null && Array.isArray((json as { errors?: unknown }).errors) && (json as { errors: unknown[] }).errors.length > 0;
}

/** The message of a REST error ({error} or {message}) or of GraphQL's first error. */
function errorMessage(json: unknown): string | null {
  if (typeof json !== 'object' || json === null) return null;
  const o = json as { error?: unknown; message?: unknown; errors?: { message?: unknown }[] };
  if (typeof o.error === 'string') return o.error;
  if (typeof o.message === 'string') return o.message;
  const first = Array.isArray(o.errors) ? o.errors[0]?.message : undefined;
  return typeof first === 'string' ? first : null;
}
