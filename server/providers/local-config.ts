// The local provider's settings (RC_LOCAL_PROVIDER: a JSON file's path, or the
// JSON itself): its price table, the image its worker containers run, and the
// faults it can be told to act out (slow, failing, full, a spot machine taken
// back), so the controller's handling of each is tested on real Docker.
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { HOST_NAME } from '../../core/schedule';
import { zodMessage } from '../../protocol/zod-message';

const offerId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/, 'offer ids are letters, digits, . _ - (at most 40)');

const LocalOffer = z
  .object({
    offerId,
    /** Canonical model (H100, RTX4090), or null for CPU slots. */
    gpuModel: z
      .string()
      .regex(/^[A-Z0-9][A-Z0-9-]{0,30}$/, 'a canonical GPU model such as H100 or RTX4090')
      .nullable(),
    gpuCount: z.number().int().min(0).max(16),
    vramGiB: z.number().min(0).max(1024),
    cpus: z.number().int().min(1).max(1024),
    ramGiB: z.number().min(0).max(65536),
    diskGiB: z.number().min(0).max(1_000_000),
    cuda: z
      .string()
      .regex(/^\d{1,2}\.\d{1,2}$/)
      .nullable()
      .default(null),
    region: z.string().max(40).nullable().default('local'),
    spot: z.boolean().default(false),
    pricePerHour: z.number().nonnegative().max(10_000),
  })
  .strict()
  .refine((o) => (o.gpuModel === null) === (o.gpuCount === 0), 'gpuModel is null exactly when gpuCount is 0');

export const LocalProviderConfig = z
  .object({
    /** Instance names are `<prefix>-<machine id>`; the sweeper deletes only containers whose names start so. */
    prefix: z
      .string()
      .regex(/^[a-z][a-z0-9]{1,19}$/, 'a prefix is 2–20 lower-case letters and digits, starting with a letter')
      .default('rclocal'),
    /** The worker containers' image: the stock job image by default (docker/worker-image). */
    image: z.string().min(1).max(200).default('rc-job:stock'),
    offers: z.array(LocalOffer).min(1).max(100),
    /** Milliseconds launch() waits after starting the container before it answers (a slow provider). */
    launchDelayMs: z.number().int().min(0).max(600_000).default(0),
    /** Offer ids whose launch fails with nothing created. */
    failLaunch: z.array(offerId).default([]),
    /** Offer ids that have no capacity (launch refused, nothing created). */
    noCapacity: z.array(offerId).default([]),
    /** Offer ids whose launch creates the container and then reports an error. */
    errorAfterCreate: z.array(offerId).default([]),
    /** A spot machine is taken back this many milliseconds after it started (describe says preempted, its container is removed); null: never. */
    spotLifetimeMs: z.number().int().min(1).max(86_400_000).nullable().default(null),
    /** With spotLifetimeMs: only this many spot machines are taken back (the first ones), the rest kept; null: every one. */
    spotTakeBacks: z.number().int().min(0).max(1000).nullable().default(null),
  })
  .strict()
  .superRefine((c, ctx) => {
    const ids = c.offers.map((o) => o.offerId);
    if (new Set(ids).size !== ids.length) ctx.addIssue({ code: 'custom', path: ['offers'], message: 'two offers have the same offerId' });
    if (!HOST_NAME.test(`${c.prefix}-m0123456789`)) ctx.addIssue({ code: 'custom', path: ['prefix'], message: 'its instance names would not be host names' });
  });
export type LocalProviderConfig = z.infer<typeof LocalProviderConfig>;

/** RC_LOCAL_PROVIDER's text (inline JSON, or a file's path) as the config, or the one sentence saying what is wrong. */
export function parseLocalProviderConfig(text: string): { config: LocalProviderConfig } | { problem: string } {
  const inline = text.trimStart().startsWith('{');
  if (!inline && !existsSync(text)) return { problem: `neither JSON nor a file that exists: ${JSON.stringify(text.slice(0, 100))}` };
  let json: unknown;
  try {
    json = JSON.parse(inline ? text : readFileSync(text, 'utf8'));
  } catch (err) {
    return { problem: `${inline ? 'its JSON' : `the file ${text}`} does not parse: ${(err as Error).message}` };
  }
  const parsed = LocalProviderConfig.safeParse(json);
  return parsed.success ? { config: parsed.data } : { problem: zodMessage(parsed.error) };
}
