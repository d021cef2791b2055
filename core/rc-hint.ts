// What npm start (and npm run demo) print so that a newcomer runs `rc` as one
// word: the checkout's node_modules/.bin on the PATH. That is the Node CLI
// (bin/rc.cjs), which finds this checkout's tokens by itself; the standalone
// binary (dist/cli/rc-<platform>) belongs to no checkout and would need
// RC_CONTROLLER and RC_TOKEN.

/** Text for inside a POSIX shell's double quotes: $, `, " and \ escaped. */
function inDq(s: string): string {
  return s.replace(/[$`"\\]/g, '\\$&');
}

/** `export PATH="<checkout>/node_modules/.bin:$PATH"`: rc on the PATH of the shell it is typed in. */
export function rcOnPathLine(root: string): string {
  return `export PATH="${inDq(root)}/node_modules/.bin:$PATH"`;
}

/**
 * `rc`, as a command that reaches this controller: with RC_DATA_DIR=<folder> first where the tokens
 * are not in the checkout's own .rc (RC_DATA_DIR set, as npm run demo and the tests do).
 */
export function rcCommand(dataDir: string, checkoutDataDir: string): string {
  return dataDir === checkoutDataDir ? 'rc' : `RC_DATA_DIR=${/^[\w./+-]+$/.test(dataDir) ? dataDir : `"${inDq(dataDir)}"`} rc`;
}
