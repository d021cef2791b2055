// What the build put in (scripts/build.mjs defines both): the version, and
// whether this is the standalone CLI (one executable compiled by Bun, installed
// by <controller>/install/rc.sh) or the Node one in a checkout.
declare const RC_VERSION: string;
declare const RC_STANDALONE: boolean;

// typeof: modules run unbuilt (tests under tsx) have neither.
export const VERSION: string = typeof RC_VERSION === 'string' ? RC_VERSION : 'dev';
export const STANDALONE: boolean = typeof RC_STANDALONE === 'boolean' && RC_STANDALONE;

/** What rc --version prints. */
export function versionLine(): string {
  return STANDALONE
    ? `rc ${VERSION} (standalone, ${process.platform}-${process.arch}; from an rc ${VERSION} controller)\n`
    : `rc ${VERSION} (Node ${process.version})\n`;
}
