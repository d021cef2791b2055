// Every REST route of the table (protocol/routes.ts), one file per resource
// under routes/, each route a few lines: parse, authorise, one use case or
// read, render. docs/api.md documents them.
import { registerAdminRoutes } from './routes/admin';
import { registerFileRoutes } from './routes/files';
import { registerFleetRoutes } from './routes/fleet';
import { registerHoldRoutes } from './routes/holds';
import { registerInstallRoutes } from './routes/install';
import { registerArrayRoutes } from './routes/arrays';
import { registerJobRoutes } from './routes/jobs';
import { registerMachineRoutes } from './routes/machines';
import { registerSessionRoutes } from './routes/session';
import type { ApiDeps } from './route-deps';
import type { Router } from './router';

export type { ApiDeps };

export function registerApi(router: Router, c: ApiDeps): void {
  registerFleetRoutes(router, c);
  registerJobRoutes(router, c);
  registerArrayRoutes(router, c);
  registerFileRoutes(router, c);
  registerHoldRoutes(router, c);
  registerMachineRoutes(router, c);
  registerInstallRoutes(router);
  registerAdminRoutes(router, c);
  registerSessionRoutes(router, c);
}
