// The worker's optional config file (RC_WORKER_CONFIG): declared labels for
// the host and its devices, and the folder of site probes.
//
//   { "labels": { "rack": "b12" },
//     "devices": { "0": { "labels": { "note": "fan noisy" } } },
//     "probesDir": "/etc/rc/probes" }
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import type { DeclaredLabels } from './labels';
import { LABEL_KEY, MAX_KEY_LENGTH, MAX_VALUE_LENGTH } from './probes/parse';
import { zodMessage } from '../protocol/zod-message';

const KEY_RULE = 'label keys start with a letter or _ and hold only letters, digits, _ . and -';

const Labels = z.record(
  z.string().max(MAX_KEY_LENGTH).regex(LABEL_KEY),
  z.string({ error: 'a label value must be a string' }).max(MAX_VALUE_LENGTH, `a label value is at most ${MAX_VALUE_LENGTH} characters`),
);

const FileSchema = z.strictObject(
  {
    labels: Labels.optional(),
    devices: z
      .record(
        z.string().regex(/^\d{1,3}$/), // 0–999, the protocol's device indexes
        z.strictObject({ labels: Labels.optional() }, { error: 'expected an object like { "labels": { … } }' }),
      )
      .optional(),
    probesDir: z.string({ error: 'must be a string (a folder path)' }).min(1, 'must not be empty').optional(),
  },
  { error: (issue) => (issue.code === 'invalid_type' ? 'expected a JSON object' : undefined) },
);

export interface WorkerFileConfig {
  /** The file it came from, as given. */
  file: string;
  declared: DeclaredLabels;
  /** Absolute; a relative probesDir is taken relative to the file's folder. */
  probesDir: string | null;
}

/** A config file that cannot be used; the message is `<file>: <what is wrong>`. */
export class WorkerConfigError extends Error {
  override name = 'WorkerConfigError';
}

/** Reads and checks the config file. Throws WorkerConfigError, never anything else. */
export function readWorkerConfigFile(file: string): WorkerFileConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a folder, not a file' : (err as Error).message;
    throw new WorkerConfigError(`${file}: cannot read it: ${why}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new WorkerConfigError(`${file}: not valid JSON: ${(err as Error).message}`);
  }
  const parsed = FileSchema.safeParse(json);
  if (!parsed.success) throw new WorkerConfigError(`${file}: ${zodMessage(parsed.error, describeIssue)}`);
  const { labels = {}, devices = {}, probesDir } = parsed.data;
  const pairs = (l: Record<string, string>) => Object.entries(l).map(([key, value]) => ({ key, value }));
  const declared: DeclaredLabels = {
    host: pairs(labels),
    devices: new Map(Object.entries(devices).map(([index, d]) => [Number(index), pairs(d.labels ?? {})])),
  };
  return { file, declared, probesDir: probesDir === undefined ? null : resolve(dirname(resolve(file)), probesDir) };
}

/** The file's own words for a bad key and an unknown field; zod's for the rest. */
function describeIssue(issue: z.core.$ZodIssue, where: string): string | undefined {
  const path = issue.path.map(String);
  if (issue.code === 'invalid_key') {
    const key = JSON.stringify(path[path.length - 1] ?? '');
    const isDevice = path.length === 2 && path[0] === 'devices';
    const parent = path.slice(0, -1).join('.');
    return isDevice
      ? `${parent}: ${key} is not a device index (use "0", "1", …)`
      : `${parent}: ${key} is not a valid label key (${KEY_RULE}, at most ${MAX_KEY_LENGTH} characters)`;
  }
  if (issue.code === 'unrecognized_keys') {
    const allowed = path.length === 0 ? 'labels, devices, probesDir' : 'labels';
    return `${where}unknown field ${issue.keys.map((k) => JSON.stringify(k)).join(', ')} (allowed: ${allowed})`;
  }
  return undefined;
}
