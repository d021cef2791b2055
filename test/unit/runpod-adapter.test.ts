// The RunPod provider (server/providers/runpod.ts) against an HTTP server
// started here that answers as RunPod's documented APIs do (REST v1 pods,
// GraphQL gpuTypes) and checks every request against the documented shapes:
// method, path, query, the Bearer key, the body's fields and their types. A
// request the documentation does not describe is recorded and fails the test.
// This is not RunPod: what the real service does beyond its documentation
// (its exact capacity error, its status codes on delete) is assumed here.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import type { LaunchSpec, Offer } from '../../server/providers/provider';
import { ProviderError } from '../../server/providers/provider';
import { loadConfig } from '../../server/config';
import { configuredProviders } from '../../server/providers/configured';
import { RunpodProvider } from '../../server/providers/runpod';

const KEY = 'rpa_test_key';

// https://docs.runpod.io/api-reference/pods/POST/pods: every field of the create body, with its type.
const CREATE_FIELDS: Record<string, (v: unknown) => boolean> = {
  allowedCudaVersions: (v) => Array.isArray(v) && v.every((x) => typeof x === 'string' && /^\d+\.\d$/.test(x)),
  cloudType: (v) => v === 'SECURE' || v === 'COMMUNITY',
  computeType: (v) => v === 'GPU' || v === 'CPU',
  containerDiskInGb: Number.isInteger,
  containerRegistryAuthId: (v) => typeof v === 'string',
  countryCodes: Array.isArray,
  cpuFlavorIds: Array.isArray,
  cpuFlavorPriority: (v) => v === 'availability' || v === 'custom',
  dataCenterIds: Array.isArray,
  dataCenterPriority: (v) => v === 'availability' || v === 'custom',
  dockerEntrypoint: (v) => Array.isArray(v) && v.every((x) => typeof x === 'string'),
  dockerStartCmd: (v) => Array.isArray(v) && v.every((x) => typeof x === 'string'),
  env: (v) => typeof v === 'object' && v !== null && Object.values(v).every((x) => typeof x === 'string'),
  globalNetworking: (v) => typeof v === 'boolean',
  gpuCount: (v) => Number.isInteger(v) && (v as number) >= 1,
  gpuTypeIds: (v) => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string'),
  gpuTypePriority: (v) => v === 'availability' || v === 'custom',
  imageName: (v) => typeof v === 'string' && v.length > 0,
  interruptible: (v) => typeof v === 'boolean',
  locked: (v) => typeof v === 'boolean',
  minDiskBandwidthMBps: (v) => typeof v === 'number',
  minDownloadMbps: (v) => typeof v === 'number',
  minRAMPerGPU: Number.isInteger,
  minUploadMbps: (v) => typeof v === 'number',
  minVCPUPerGPU: Number.isInteger,
  name: (v) => typeof v === 'string' && v.length > 0,
  networkVolumeId: (v) => typeof v === 'string',
  ports: Array.isArray,
  supportPublicIp: (v) => typeof v === 'boolean',
  templateId: (v) => v === null || typeof v === 'string',
  vcpuCount: Number.isInteger,
  volumeInGb: Number.isInteger,
  volumeMountPath: (v) => typeof v === 'string',
};
// https://docs.runpod.io/api-reference/pods/GET/pods: the list's query parameters.
const LIST_PARAMS = new Set([
  'computeType',
  'cpuFlavorId',
  'dataCenterId',
  'desiredStatus',
  'endpointId',
  'gpuTypeId',
  'id',
  'imageName',
  'includeMachine',
  'includeNetworkVolume',
  'includeSavingsPlans',
  'includeTemplate',
  'includeWorkers',
  'name',
  'networkVolumeId',
  'templateId',
]);
// https://graphql-spec.runpod.io: GpuType's fields.
const GPU_TYPE_FIELDS = new Set(
  'lowestPrice maxGpuCount maxGpuCountCommunityCloud maxGpuCountSecureCloud minPodGpuCount id displayName manufacturer memoryInGb cudaCores secureCloud communityCloud securePrice communityPrice oneMonthPrice threeMonthPrice sixMonthPrice oneWeekPrice communitySpotPrice secureSpotPrice'.split(
    ' ',
  ),
);

const GPU_TYPES = [
  {
    id: 'NVIDIA GeForce RTX 4090',
    displayName: 'RTX 4090',
    memoryInGb: 24,
    maxGpuCount: 8,
    secureCloud: true,
    communityCloud: true,
    securePrice: 0.69,
    communityPrice: 0.34,
  },
  {
    id: 'NVIDIA A100 80GB PCIe',
    displayName: 'A100 PCIe',
    memoryInGb: 80,
    maxGpuCount: 8,
    secureCloud: true,
    communityCloud: false,
    securePrice: 1.64,
    communityPrice: 1.19,
  },
  {
    id: 'NVIDIA H100 80GB HBM3',
    displayName: 'H100 SXM',
    memoryInGb: 80,
    maxGpuCount: 2,
    secureCloud: true,
    communityCloud: false,
    securePrice: 2.99,
    communityPrice: null,
  },
];

interface FakePod {
  id: string;
  name: string;
  desiredStatus: string;
  body: Record<string, unknown>;
}

const fake = {
  pods: [] as FakePod[],
  /** Requests the documentation does not describe: each fails the test. */
  violations: [] as string[],
  requests: [] as string[],
  /** What POST /pods answers: a pod, RunPod's no-capacity error, or a server error. */
  create: 'ok' as 'ok' | 'capacity' | 'error500',
  nextId: 1,
};
let server: Server;
let base = '';

function send(res: ServerResponse, status: number, body?: unknown) {
  res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
  res.end(body === undefined ? '' : JSON.stringify(body));
}

function violation(res: ServerResponse, what: string) {
  fake.violations.push(what);
  send(res, 400, { error: `undocumented request: ${what}` });
}

async function handle(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString();
  const url = new URL(req.url ?? '/', 'http://x');
  fake.requests.push(`${req.method} ${url.pathname}${url.search}`);
  if (req.headers.authorization !== `Bearer ${KEY}`) {
    if (!/^Bearer \S+$/.test(req.headers.authorization ?? '')) return violation(res, 'no Bearer authorization header');
    return send(res, 401, { error: 'Unauthorized' });
  }
  let body: unknown;
  if (raw) {
    if (req.headers['content-type'] !== 'application/json') return violation(res, 'a body without content-type application/json');
    try {
      body = JSON.parse(raw);
    } catch {
      return violation(res, 'a body that is not JSON');
    }
  }
  if (req.method === 'POST' && url.pathname === '/graphql') return graphql(res, body);
  if (req.method === 'GET' && url.pathname === '/v1/pods') {
    for (const k of url.searchParams.keys()) if (!LIST_PARAMS.has(k)) return violation(res, `GET /pods?${k}`);
    const name = url.searchParams.get('name');
    const pods = fake.pods.filter((p) => name === null || p.name === name);
    return send(
      res,
      200,
      pods.map((p) => ({ id: p.id, name: p.name, desiredStatus: p.desiredStatus, costPerHr: '0.69', image: p.body.imageName })),
    );
  }
  if (req.method === 'POST' && url.pathname === '/v1/pods') return create(res, body);
  const del = /^\/v1\/pods\/([^/]+)$/.exec(url.pathname);
  if (req.method === 'DELETE' && del) {
    if (raw) return violation(res, 'DELETE with a body');
    const pod = fake.pods.find((p) => p.id === del[1]);
    if (!pod) return send(res, 404, { error: 'pod not found' });
    fake.pods = fake.pods.filter((p) => p !== pod);
    return send(res, 204);
  }
  return violation(res, `${req.method} ${url.pathname}`);
}

function create(res: ServerResponse, body: unknown) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return violation(res, 'POST /pods without an object body');
  const b = body as Record<string, unknown>;
  for (const [k, v] of Object.entries(b)) {
    const check = CREATE_FIELDS[k];
    if (!check) return violation(res, `POST /pods with field ${k}`);
    if (!check(v)) return violation(res, `POST /pods with ${k}=${JSON.stringify(v)}`);
  }
  for (const k of ['name', 'imageName', 'gpuTypeIds', 'gpuCount']) if (!(k in b)) return violation(res, `POST /pods without ${k}`);
  if (fake.create === 'error500') return send(res, 500, { error: 'internal error' });
  // The message RunPod's API gives when no machine fits (runpod/runpod-python#21); the REST status is assumed.
  if (fake.create === 'capacity')
    return send(res, 400, { error: 'There are no longer any instances available with the requested specifications. Please refresh and try again.' });
  const pod = { id: `pod${fake.nextId++}`, name: b.name as string, desiredStatus: 'RUNNING', body: b };
  fake.pods.push(pod);
  return send(res, 201, { id: pod.id, name: pod.name, desiredStatus: pod.desiredStatus });
}

function graphql(res: ServerResponse, body: unknown) {
  const query = (body as { query?: unknown } | undefined)?.query;
  if (typeof query !== 'string') return violation(res, 'POST /graphql without a query string');
  const m = /^\s*query\s+\w*\s*\{\s*gpuTypes\s*\{([^{}]*)\}\s*\}\s*$/.exec(query);
  if (!m) return violation(res, `a GraphQL query other than gpuTypes: ${query}`);
  const fields = m[1]!.trim().split(/\s+/);
  for (const f of fields) if (!GPU_TYPE_FIELDS.has(f)) return violation(res, `gpuTypes field ${f}`);
  const gpuTypes = GPU_TYPES.map((t) => Object.fromEntries(fields.map((f) => [f, (t as Record<string, unknown>)[f] ?? null])));
  return send(res, 200, { data: { gpuTypes } });
}

const provider = (key = KEY) =>
  new RunpodProvider({
    apiKey: key,
    image: 'registry.example.org/rc-worker:1',
    accountName: 'lab',
    prefix: 'rc-lab',
    restUrl: `${base}/v1`,
    graphqlUrl: `${base}/graphql`,
  });

const spec = (name: string, offer: Offer): LaunchSpec => ({ name, offer, controllerUrl: 'https://rc.example.org', joinKey: 'rc_h_secret' });

before(async () => {
  server = createServer((req, res) => {
    handle(req, res).catch((err) => send(res, 500, { error: String(err) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  fake.pods = [];
  fake.violations = [];
  fake.requests = [];
  fake.create = 'ok';
});
afterEach(() => assert.deepEqual(fake.violations, [], 'every request matches RunPod documentation'));

async function rejectsWith(p: Promise<unknown>, kind: ProviderError['kind']) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ProviderError, `a ProviderError, not ${err}`);
    assert.equal(err.kind, kind, err.message);
    assert.ok(err.message.length > 10);
    return true;
  });
}

test('offers: RunPod GPU types at their on-demand prices, filtered by model, count and price, cheapest first', async () => {
  const p = provider();
  const all = await p.offers({});
  assert.ok(all.length > 0);
  assert.ok(all.every((o) => o.account === 'runpod/lab' && o.spot === false && o.simulated === false));
  assert.deepEqual(
    all.map((o) => o.pricePerHour),
    [...all.map((o) => o.pricePerHour)].sort((a, b) => a - b),
  );
  // H100 offers stop at maxGpuCount 2; the A100 has no community cloud.
  assert.deepEqual(
    all.filter((o) => o.gpuModel === 'H100').map((o) => o.gpuCount),
    [1, 2],
  );
  assert.ok(!all.some((o) => o.gpuModel === 'A100-80GB' && o.offerId.startsWith('COMMUNITY')));

  const a100 = await p.offers({ gpuModels: ['A100'], minGpus: 2, maxPricePerHour: 7 });
  assert.deepEqual(
    a100.map((o) => [o.gpuModel, o.gpuCount, o.vramGiB, o.pricePerHour]),
    [
      ['A100-80GB', 2, 80, 3.28],
      ['A100-80GB', 4, 80, 6.56],
    ],
  );
  const cheap4090 = await p.offers({ gpuModels: ['RTX 4090'], maxPricePerHour: 0.5 });
  assert.deepEqual(
    cheap4090.map((o) => [o.offerId, o.pricePerHour]),
    [['COMMUNITY:1:NVIDIA GeForce RTX 4090', 0.34]],
  );
  assert.deepEqual(await p.offers({ minVramGiB: 100 }), []);
  // --spot lets spot compete with on-demand; RunPod offers only on-demand, and still offers it.
  assert.ok((await p.offers({ spot: true, gpuModels: ['H100'] })).length > 0);
});

test('launch: a pod named as the spec says, joining the controller; again by the same name does nothing', async () => {
  const p = provider();
  const [offer] = await p.offers({ gpuModels: ['H100'], minGpus: 2, minCpus: 24, minCuda: '12.8' });
  assert.ok(offer);
  await p.launch(spec('rc-lab-17', offer));
  await p.launch(spec('rc-lab-17', offer));
  assert.equal(fake.pods.length, 1);
  const body = fake.pods[0]!.body;
  assert.equal(body.name, 'rc-lab-17');
  assert.deepEqual(body.gpuTypeIds, ['NVIDIA H100 80GB HBM3']);
  assert.equal(body.gpuCount, 2);
  assert.equal(body.cloudType, 'SECURE');
  assert.equal(body.interruptible, false);
  assert.equal(body.minVCPUPerGPU, 12);
  assert.deepEqual(body.allowedCudaVersions, ['13.0', '12.9', '12.8']);
  assert.deepEqual(body.env, { RC_CONTROLLER_URL: 'https://rc.example.org', RC_HOST_TOKEN: 'rc_h_secret' });
  // The key is in the env, not in the command RunPod shows.
  const cmd = (body.dockerStartCmd as string[]).join(' ');
  assert.match(cmd, /\$RC_CONTROLLER_URL\/install\.sh/);
  assert.doesNotMatch(cmd, /rc_h_secret/);
  assert.equal(fake.requests.filter((r) => r === 'POST /v1/pods').length, 1);
});

test('describe: RUNNING → running, EXITED → preempted, TERMINATED or unknown → gone', async () => {
  fake.pods.push(
    { id: 'a', name: 'rc-lab-1', desiredStatus: 'RUNNING', body: {} },
    { id: 'b', name: 'rc-lab-2', desiredStatus: 'EXITED', body: {} },
    { id: 'c', name: 'rc-lab-3', desiredStatus: 'TERMINATED', body: {} },
  );
  assert.deepEqual(await provider().describe(['rc-lab-1', 'rc-lab-2', 'rc-lab-3', 'rc-lab-4']), [
    { name: 'rc-lab-1', state: 'running' },
    { name: 'rc-lab-2', state: 'preempted' },
    { name: 'rc-lab-3', state: 'gone' },
    { name: 'rc-lab-4', state: 'gone' },
  ]);
});

test('terminate: deletes the pod by id; a pod already gone is gone', async () => {
  fake.pods.push({ id: 'a', name: 'rc-lab-1', desiredStatus: 'RUNNING', body: {} }, { id: 'b', name: 'other', desiredStatus: 'RUNNING', body: {} });
  const p = provider();
  assert.equal(await p.terminate('rc-lab-1'), 'gone');
  assert.deepEqual(
    fake.pods.map((x) => x.name),
    ['other'],
  );
  assert.ok(fake.requests.includes('DELETE /v1/pods/a'));
  assert.equal(await p.terminate('rc-lab-1'), 'gone');
  assert.equal(await p.terminate('never-was'), 'gone');
});

test('list: only the names that start with the prefix, never another pod', async () => {
  fake.pods.push(
    { id: 'a', name: 'rc-lab-1', desiredStatus: 'RUNNING', body: {} },
    { id: 'b', name: 'rc-lab-2', desiredStatus: 'EXITED', body: {} },
    { id: 'c', name: 'my-notebook', desiredStatus: 'RUNNING', body: {} },
    { id: 'd', name: 'rc-labx', desiredStatus: 'RUNNING', body: {} },
    { id: 'e', name: 'rc-lab-3', desiredStatus: 'TERMINATED', body: {} },
  );
  assert.deepEqual(await provider().list('rc-lab-'), ['rc-lab-1', 'rc-lab-2']);
});

test('errors: a refused key is bad_credentials, no machine is no_capacity, a server error is failed', async () => {
  await rejectsWith(provider('rpa_wrong').offers({}), 'bad_credentials');
  await rejectsWith(provider('rpa_wrong').list('rc-'), 'bad_credentials');
  const p = provider();
  const [offer] = await p.offers({});
  assert.ok(offer);
  fake.create = 'capacity';
  await rejectsWith(p.launch(spec('rc-lab-5', offer)), 'no_capacity');
  fake.create = 'error500';
  await rejectsWith(p.launch(spec('rc-lab-5', offer)), 'failed');
  assert.equal(fake.pods.length, 0);
  await rejectsWith(new RunpodProvider({ apiKey: KEY, image: 'x', restUrl: 'http://127.0.0.1:1/v1' }).list('rc-'), 'failed');
});

test("settings: the controller's (server/config.ts); none without a key, a sentence for a bad one", () => {
  const runpod = (env: Record<string, string>) => configuredProviders(loadConfig(env)).find((p) => p.account.startsWith('runpod/'));
  assert.equal(runpod({}), undefined);
  assert.throws(() => loadConfig({ RC_RUNPOD_API_KEY: 'rpa_0123456789' }), /RC_RUNPOD_IMAGE: required with RC_RUNPOD_API_KEY/);
  assert.throws(() => loadConfig({ RC_RUNPOD_API_KEY: 'rpa_0123456789', RC_RUNPOD_IMAGE: 'i', RC_RUNPOD_PREFIX: 'Bad Prefix' }), /RC_RUNPOD_PREFIX/);
  const p = runpod({ RC_RUNPOD_API_KEY: 'rpa_0123456789', RC_RUNPOD_IMAGE: 'i', RC_RUNPOD_ACCOUNT: 'lab-b' });
  assert.ok(p instanceof RunpodProvider);
  assert.equal(p.account, 'runpod/lab-b');
  assert.equal(p.prefix, 'rc');
});
