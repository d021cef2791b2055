// The dashboard's server-side view of who is signed in (the same tokens as the API).
import { identify, type Identity } from './auth';
import { connect, type Database } from './db';

let shared: Database | null = null;

/** Next bundles pages apart from server.ts, so pages keep their own small pool. */
export function pageDb(): Database {
  if (!shared) {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('DATABASE_URL is not set for the dashboard');
    shared = connect(url, 3);
  }
  return shared;
}

export async function pageIdentity(token: string | undefined): Promise<Identity | null> {
  const id = await identify(pageDb().db, token);
  return id && id.kind !== 'host' ? id : null;
}
