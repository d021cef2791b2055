// What scripts/test.mjs needs from the sources, bundled to dist/test-support.js.
export { startEmbeddedPostgres } from '../server/embedded-pg';
export { connect, runMigrations } from '../server/db';
