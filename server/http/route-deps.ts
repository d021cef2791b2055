// What the routes share: the parts of the controller they need (not the
// controller itself), and the few helpers more than one resource uses.
import type { RuntimeLimits } from '../../core/runtime-limit';
import { RcError } from '../../core/errors';
import type { IncomingMessage } from 'node:http';
import type { Inventory } from '../inventory';
import type { Reservations } from '../reservations';
import type { Db, Sql } from '../db';
import type { JobEvents } from '../job-events';
import type { OutputWriter } from '../output-writer';
import type { Scheduler } from '../scheduler';
import type { WorkerHub } from '../worker-hub';
import type { JobEngine } from '../jobs/engine';
import type { FairShare } from '../jobs/fair-share';
import type { Quotas } from '../jobs/quota';
import type { Router } from './router';
import { reachedOverHttps } from './session';
import type { LiveFeed } from '../live';
import type { Metrics } from '../metrics';
import type { Notice } from '../../protocol/wire';
import type { AuthLimit } from '../auth-limit';
import type { Provider } from '../providers/provider';
import type { MachineView } from '../../protocol/wire';

/** What the routes need of the controller: its parts, not the controller itself. */
export interface ApiDeps {
  db: Db;
  sql: Sql;
  /** The job engine: every change of a job a route asks for goes through it. */
  engine: JobEngine;
  events: JobEvents;
  writer: OutputWriter;
  outputLimitBytes: number;
  hub: WorkerHub;
  scheduler: Scheduler;
  /** Whether a host's worker is connected to this controller. */
  holds(hostName: string): boolean;
  /** The fleet kept in memory (server/inventory.ts). */
  inventory: Inventory;
  /** The free devices held back for a queued job (server/reservations.ts): listed as reserved. */
  reservations: Pick<Reservations, 'now'>;
  /** The dashboard's live view. */
  live: Pick<LiveFeed, 'changed'>;
  /** A revoked token: out of the auth cache, its live sockets cut. */
  cutToken(tokenId: number): void;
  /** A dashboard session signed out: its sockets cut, here and on every other controller. */
  cutSession(sessionId: number): void;
  /** The tokens' fair-share ranks: GET /api/queue and GET /api/ps order the queue as the scheduling pass does; its half-life, for the Teams page. */
  fairShare: Pick<FairShare, 'ranks' | 'halfLifeS'>;
  /** What the --gpus limits leave: GET /api/queue and GET /api/ps give quota waits as reasons; a limit set is read again at once. */
  quotas: Pick<Quotas, 'view' | 'forget'>;
  /** RC_RESERVE_AFTER_S: when a multi-GPU job starts holding devices back (GET /api/queue's reasons). */
  reserveAfterS: number;
  /** What GET /metrics serves; its grant latency is observed by startJob too. */
  metrics: Pick<Metrics, 'text' | 'contentType' | 'granted'>;
  /** The fleet's default and maximum --max-runtime (core/runtime-limit.ts). */
  runtimeLimits: RuntimeLimits;
  /** Token guesses, limited per client address (server/auth-limit.ts): the sign-in counts its refusals too. */
  authLimit: AuthLimit;
  /** Machines from providers: the configured accounts (GET /api/offers), and deleting one (server/machines/lifecycle.ts; null: no such machine). */
  machines: {
    providers: readonly Provider[];
    /** RC_MAX_MACHINES. */
    maxMachines: number;
    terminate(id: string, why: string, actor: string): Promise<MachineView | null>;
  };
  /** What this controller wants people to know now (GET /api/notices). */
  notices(): Notice[];
}

/** A Host header fit to put in a command line: a name or address and a port, nothing else. */
export const HOST_HEADER = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/** A query flag that is 1, 0 or absent; anything else is a bad_request saying what it does. */
export function flag(query: URLSearchParams, key: string, what: string): boolean {
  const v = query.get(key);
  if (v !== null && v !== '1' && v !== '0') throw new RcError('bad_request', `${key}: ${JSON.stringify(v.slice(0, 20))} is not 1 or 0; ${what}`);
  return v === '1';
}

/** Where hosts reach this controller: RC_PUBLIC_URL, or the address this request came to. */
export const controllerUrl = (router: Router, req: IncomingMessage): string =>
  (
    router.publicUrl ?? `${reachedOverHttps(req, null) ? 'https' : 'http'}://${HOST_HEADER.test(req.headers.host ?? '') ? req.headers.host : 'localhost'}`
  ).replace(/\/+$/, '');
