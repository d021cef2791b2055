// The body schema of every route that takes a JSON body, checked against the
// route table's types (protocol/routes.ts); apart from protocol/api.ts so the
// schemas do not import the route table that is built from them.
import type { z } from 'zod';
import {
  ClearQuarantine,
  CreateTeam,
  CreateToken,
  Explain,
  ExtendHold,
  KillJob,
  NoBody,
  RegisterHost,
  ReleaseHold,
  SetLimits,
  SetTeam,
  SetToken,
  SubmitArray,
  SubmitJob,
  TurnHostOff,
  WriteSheet,
} from './api';
import type { BodyOf, JsonBodyRoute } from './routes';

/**
 * The body schema of every route that takes a JSON body, by route name
 * (protocol/routes.ts): the router parses the body with it before the
 * handler runs. rc cp's upload takes raw bytes; the sign-in, which also
 * takes a form, reads its own.
 */
export const BODIES = {
  'PUT /api/devices/:name/note': WriteSheet,
  'PUT /api/hosts/:name/sheet': WriteSheet,
  'POST /api/explain': Explain,
  'POST /api/jobs': SubmitJob,
  'POST /api/jobs/:id/kill': KillJob,
  'POST /api/arrays': SubmitArray,
  'POST /api/arrays/:id/kill': KillJob,
  'POST /api/holds/:id/release': ReleaseHold,
  'POST /api/holds/:id/extend': ExtendHold,
  'POST /api/admin/hosts': RegisterHost,
  'POST /api/admin/hosts/:name/off': TurnHostOff,
  'POST /api/admin/hosts/:name/on': NoBody,
  'POST /api/admin/devices/:name/clear': ClearQuarantine,
  'POST /api/admin/tokens': CreateToken,
  'PUT /api/admin/tokens/:id': SetToken,
  'POST /api/admin/teams': CreateTeam,
  'PUT /api/admin/teams/:name': SetTeam,
  'PUT /api/admin/limits/:scope': SetLimits,
} as const satisfies { [N in JsonBodyRoute]: z.ZodType<unknown, BodyOf<N>> };
