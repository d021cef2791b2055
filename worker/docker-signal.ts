// How a docker job's processes are signalled. Killing the `docker exec`
// client does not kill anything inside the container. A device container
// runs one job at a time (its device's lease), so the job's processes are
// all of the container's processes but the container's own two: its init
// (docker-init, pid 1) and the keep-alive (init's first child). That takes the
// container's own process tree, the pid namespace, as the job's: nothing a
// job starts can leave it, whatever its environment, session or parent (a
// setsid'ed, double-forked grandchild with a cleared environment included).
// The worker signals them from the host's /proc when it can see them
// (proc-signal.ts), else with a small sh script run in the container. A
// one-off container is signalled through docker, and its processes go with it.
import { dockerCall } from './docker-cli';
import type { ProcessTree } from './runtime';

/**
 * Signals every process in the container except pid 1, the keep-alive (the
 * child of pid 1 that started first) and itself. POSIX sh with builtins only
 * (it forks nothing, so it never meets a child of its own): runs under
 * busybox sh and dash. The processes are stopped before they are signalled,
 * so that a parent cannot see its children die and exit 0 before its own
 * signal comes. With KILL it goes round again while it finds some, since a
 * dying tree may still fork. Prints how many it hit.
 */
export const SIGNAL_SCRIPT = `sig=$1 me=$$ keep= oldest= n=0 round=0
for d in /proc/[0-9]*; do
  { read -r line <"$d/stat"; } 2>/dev/null || continue
  set -- \${line##*) }
  [ "$2" = 1 ] || continue
  if [ -z "$oldest" ] || [ "\${20}" -lt "$oldest" ]; then oldest=\${20} keep=\${d#/proc/}; fi
done
while :; do
  pids=
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    case " 1 $me $keep " in *" $p "*) continue ;; esac
    { read -r line <"$d/stat"; } 2>/dev/null || continue
    set -- \${line##*) }
    [ "$1" = Z ] && continue
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

/** What containerTree needs of the device containers (worker/docker-containers.ts). */
export interface ContainerSweeper {
  /** Signals every job process in the container; resolves to how many it hit. */
  sweep(container: string, sig: 'TERM' | 'KILL'): Promise<number>;
  /** Kills every job process in the container and waits (bounded) until they are gone; resolves to the host pids still there. */
  reap(container: string): Promise<number[]>;
}

/** A job in a device container: every process in it but the container's own; nothing of a finished job may stay. */
export function containerTree(containers: ContainerSweeper, container: string): ProcessTree {
  return {
    signal: (sig) => containers.sweep(container, sig).then(() => {}),
    reap: () => containers.reap(container),
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
