// The timings of a host's liveness, all from RC_HOST_TIMEOUT_S, in one place:
// how often a worker beats, how long it waits for a beat's acknowledgement
// before it leaves its controller for another, and how long other controllers
// wait for it to arrive before they count its host dead (server/reaper.ts).

/** A worker heartbeats every third of the host timeout. */
export function heartbeatMs(hostTimeoutS: number): number {
  return Math.max(200, (hostTimeoutS * 1000) / 3);
}

/** A beat unacknowledged this long sends the worker to the next controller: half the timeout, and never under 2 s (a busy controller is not a frozen one). */
export function heartbeatAckMs(hostTimeoutS: number): number {
  return Math.max(2000, (hostTimeoutS * 1000) / 2);
}

/** Seconds past the timeout a host whose controller went silent holding it gets to reach another: a second timeout, or the worker's time to leave and a second more when that is longer. */
export function switchGraceS(hostTimeoutS: number): number {
  return Math.max(hostTimeoutS, (heartbeatMs(hostTimeoutS) + heartbeatAckMs(hostTimeoutS)) / 1000 + 1);
}
