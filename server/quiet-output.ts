// A daemon's log goes to stdout and stderr, which may be a pipe whose reader
// is gone (`npm start | tee`, tee killed). Node reports the failed write
// (EPIPE) as an 'error' on the stream; unhandled, it crashes the process at
// its next log line, and a supervised child that crashes at each start is a
// restart loop. A log nobody can read is not worth a process: logging ends
// quietly (a destroyed stream drops later writes without another error).
export function quietOnClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
}
