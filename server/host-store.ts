// What a worker says of its host, stored: the host online with its version,
// its devices and labels as its hello or a re-probe reports them (the host
// away when its socket closes: server/worker-claim.ts).
import { and, eq, notInArray, sql } from 'drizzle-orm';
import { devices as devicesT, hosts, labels } from '../db/schema';
import type { Hello, Inventory } from '../protocol/worker';
import type { Db, Tx } from './db';

/** A hello: the host online, its worker's version, its devices and labels, in one transaction. */
export function storeHello(db: Db, hostName: string, hello: Hello): Promise<void> {
  return db.transaction(async (tx) => {
    await tx
      .insert(hosts)
      .values({ name: hostName, status: 'online', lastSeenAt: sql`now()`, workerVersion: hello.version })
      .onConflictDoUpdate({ target: hosts.name, set: { status: 'online', lastSeenAt: sql`now()`, workerVersion: hello.version } });
    await storeInventory(tx, hostName, hello);
  });
}

/** A re-probe's inventory: the host's devices and labels replaced. */
export function storeReprobe(db: Db, hostName: string, inv: Inventory): Promise<void> {
  return db.transaction((tx) => storeInventory(tx, hostName, inv));
}

/** Replaces a host's devices and labels with what its worker reports. */
async function storeInventory(tx: Tx, hostName: string, inv: Inventory): Promise<void> {
  const indexes = inv.devices.map((d) => d.index);
  for (const d of inv.devices) {
    await tx
      .insert(devicesT)
      .values({ hostName, index: d.index, uuid: d.uuid ?? null, present: true })
      .onConflictDoUpdate({ target: [devicesT.hostName, devicesT.index], set: { uuid: d.uuid ?? null, present: true } });
  }
  await tx
    .update(devicesT)
    .set({ present: false })
    .where(and(eq(devicesT.hostName, hostName), indexes.length ? notInArray(devicesT.index, indexes) : undefined));
  await tx.delete(labels).where(eq(labels.hostName, hostName));
  const rows = [
    ...inv.hostLabels.map((l) => ({ ...l, deviceIndex: -1 })),
    ...inv.devices.flatMap((d) => d.labels.map((l) => ({ ...l, deviceIndex: d.index }))),
  ].map((l) => ({
    hostName,
    deviceIndex: l.deviceIndex,
    key: l.key,
    value: l.value,
    source: l.source,
    probe: l.probe ?? null,
    seenAt: l.seenAt ? new Date(l.seenAt) : new Date(),
    stale: l.stale ?? null,
  }));
  // In pieces: one statement's parameters are at most 65,535 (8 per label; a hello may carry 65,000 labels).
  for (let i = 0; i < rows.length; i += LABELS_PER_INSERT)
    await tx
      .insert(labels)
      .values(rows.slice(i, i + LABELS_PER_INSERT))
      .onConflictDoNothing();
}

/** Labels per INSERT (each takes 8 of a statement's 65,535 parameters). */
const LABELS_PER_INSERT = 4000;
