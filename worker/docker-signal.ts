// How a docker job's processes are signalled. Killing the `docker exec`
// client does not kill anything inside the container, so every job process
// carries RC_JOB_ID in its environment and a small sh script run in the
// container (or the host's /proc, when it can see them: proc-signal.ts)
// signals the processes that have it. A one-off container is signalled
// through docker, and its processes go with it.
import { dockerCall } from './docker-cli';
import type { ProcessTree } from './runtime';

/**
 * Signals every process in the container whose environment has
 * RC_JOB_ID=<id> (any RC_JOB_ID when id is empty), except itself. POSIX sh
 * only: runs under busybox sh and dash. The matches are stopped before they
 * are signalled, so that a parent cannot see its children die and exit 0
 * before its own signal comes. With KILL it goes round again while it finds
 * some, since a dying tree may still fork. Prints how many it hit.
 */
export const SIGNAL_SCRIPT = `sig=$1 id=$2 me=$$ round=0 n=0
while :; do
  pids=
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "$p" = "$me" ] && continue
    if [ -n "$id" ]; then
      tr '\\0' '\\n' 2>/dev/null <"$d/environ" | grep -qxF "RC_JOB_ID=$id" || continue
    else
      tr '\\0' '\\n' 2>/dev/null <"$d/environ" | grep -q '^RC_JOB_ID=' || continue
    fi
    pids="$pids $p"
  done
  [ -z "$pids" ] && break
  set -- $pids
  [ "$round" = 0 ] && n=$#
  if [ "$sig" = KILL ]; then
    kill -s KILL "$@" 2>/dev/null
  else
    kill -s STOP "$@" 2>/dev/null; kill -s "$sig" "$@" 2>/dev/null; kill -s CONT "$@" 2>/dev/null
    break
  fi
  round=$((round+1))
  [ "$round" -ge 10 ] && break
done
echo "$n"`;

/** A job in a device container: its processes are those tagged with its RC_JOB_ID; nothing of a finished job may stay. */
/** What taggedTree needs of the device containers (worker/docker-containers.ts). */
export interface TaggedSignaller {
  signalTagged(container: string, sig: 'TERM' | 'KILL', jobId: string): Promise<number>;
}

export function taggedTree(containers: TaggedSignaller, container: string, jobId: string): ProcessTree {
  return {
    signal: (sig) => containers.signalTagged(container, sig, jobId).then(() => {}),
    reap: () => containers.signalTagged(container, 'KILL', jobId).then(() => []),
  };
}

/** A one-off container (docker run --rm): signalled through docker; its processes go with it. */
export function oneOffTree(docker: string, name: string): ProcessTree {
  return {
    signal: async (sig) => {
      await dockerCall(docker, sig === 'TERM' ? ['kill', '-s', 'TERM', name] : ['kill', name]);
    },
    reap: () => Promise.resolve([]),
  };
}
