#!/bin/sh
# A one-node Slurm on this machine, so `npm run bench` can time `srun -n1 true`
# beside `rc run -- true` (issue 16). Run as root after
# `apt-get install -y slurm-wlm`; run again, it restarts the daemons.
#   sh bench/slurm-one-node.sh         configure and start munged, slurmctld, slurmd
#   sh bench/slurm-one-node.sh stop    stop them
# It writes /etc/slurm/slurm.conf (this host as the only node, every CPU and its
# memory; no accounting, no cgroups, so a job step costs what Slurm itself costs)
# and keeps its state in /var/lib/rc-bench-slurm.
set -eu

state=/var/lib/rc-bench-slurm
# Each daemon is stopped by the pid it wrote at its start (SlurmdPidFile, SlurmctldPidFile
# below; munged's own), never by name: only what this script started, and only if that pid
# still runs that program (a stale file's pid may be someone else's now).
stop() {
  for d in "slurmd:$state/slurmd.pid" "slurmctld:$state/slurmctld.pid" "munged:/run/munge/munged.pid"; do
    name=${d%%:*}
    file=${d#*:}
    pid=$(cat "$file" 2>/dev/null || true)
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = "$name" ]; then
      kill "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
  done
  sleep 0.5
}
if [ "${1:-}" = stop ]; then
  stop
  exit 0
fi
for bin in srun slurmctld slurmd munged; do
  command -v "$bin" >/dev/null 2>&1 || { echo "slurm-one-node: $bin not found: apt-get install -y slurm-wlm" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "slurm-one-node: run it as root (it starts slurmd and munged)" >&2; exit 1; }

stop
node=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/MemTotal/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
mkdir -p "$state/ctld" "$state/d" /etc/slurm /var/log/slurm /run/munge
chown slurm:slurm "$state/ctld" /var/log/slurm
chown munge:munge /run/munge

# munge authenticates every Slurm message; its key is made once.
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key

cat > /etc/slurm/slurm.conf <<EOF
ClusterName=rcbench
SlurmctldHost=$node
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
NodeName=$node CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=bench Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF

su -s /bin/sh munge -c 'munged' 2>/dev/null || munged --force
slurmctld
slurmd
# Ready once the node answers a job step.
i=0
until srun -n1 true >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -lt 60 ] || { echo "slurm-one-node: srun still fails after 30 s; see /var/log/slurm/*.log" >&2; exit 1; }
  sleep 0.5
done
echo "slurm-one-node: $node is up ($cpus CPUs, ${mem_mb} MiB); srun -n1 true works"
