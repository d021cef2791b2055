// The credentials `npm start` makes so a checkout works with no set-up: a
// client and an admin token for the CLI, and a host credential for the local
// worker. Secrets live only in files under the data folder (mode 0600); the
// database keeps their hashes.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hosts } from '../db/schema';
import { createToken } from './auth';
import type { Db } from './db';
import { newSecret } from './tokens';

export interface LocalCredentials {
  controller: string;
  clientToken: string;
  adminToken: string;
}

export interface LocalWorkerCredentials {
  hostName: string;
  credential: string;
}

export async function ensureLocalCredentials(db: Db, dataDir: string, controller: string): Promise<LocalCredentials> {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'local.json');
  const old = readJson<LocalCredentials>(file);
  const creds: LocalCredentials = {
    controller,
    clientToken: old?.clientToken ?? newSecret('client'),
    adminToken: old?.adminToken ?? newSecret('admin'),
  };
  await createToken(db, 'client', 'local client (npm start)', null, creds.clientToken);
  await createToken(db, 'admin', 'local admin (npm start)', null, creds.adminToken);
  writeFileSync(file, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 });
  return creds;
}

export async function ensureLocalWorker(db: Db, dataDir: string, hostName: string): Promise<LocalWorkerCredentials> {
  const file = join(dataDir, 'worker.json');
  const old = readJson<LocalWorkerCredentials>(file);
  const creds: LocalWorkerCredentials = old?.hostName === hostName ? old : { hostName, credential: newSecret('host') };
  await db.insert(hosts).values({ name: hostName }).onConflictDoNothing();
  await createToken(db, 'host', `local worker on ${hostName}`, hostName, creds.credential);
  writeFileSync(file, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 });
  return creds;
}

function readJson<T>(file: string): T | null {
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return null;
  }
}
