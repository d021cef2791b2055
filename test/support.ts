// What scripts/test.mjs needs from the sources, bundled to dist/test-support.js.
export { startEmbeddedPostgres } from '../server/embedded-pg';
export { connect, runMigrations } from '../server/db';
export { launchMachine, terminateMachine, machineRow } from '../server/machines/lifecycle';
export { LocalProvider } from '../server/providers/local';
export { parseLocalProviderConfig } from '../server/providers/local-config';
export { placeJob } from '../server/machines/placement';
export { FailedOffers } from '../core/cheapest-fit';
export { credentialFingerprint } from '../server/providers/configured';
export { recordProviderAccounts } from '../server/providers/accounts';
