#!/usr/bin/env bash
# A throwaway one-node Slurm cluster on loopback, for tests: munged, slurmctld
# and slurmd started by hand (no systemd), everything under one folder.
#   cluster.sh start DIR   -> prints the SLURM_CONF path; exit 3 when it cannot start here
#   cluster.sh stop DIR    -> cancels every job and stops the daemons
set -uo pipefail
cmd=${1:?start|stop}
dir=${2:?folder}
sbin=/usr/sbin

stop() {
  export SLURM_CONF="$dir/slurm.conf"
  scancel --quiet --full -u "$(id -un)" 2>/dev/null || true
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
  done
  sleep 0.5
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null
  done
  return 0
}

if [ "$cmd" = stop ]; then stop; exit 0; fi

[ "$(id -u)" -eq 0 ] || { echo "not root: cannot start munged/slurmd" >&2; exit 3; }
for b in slurmctld slurmd munged; do
  command -v "$b" >/dev/null 2>&1 || [ -x "$sbin/$b" ] || { echo "$b not installed" >&2; exit 3; }
done
mkdir -p "$dir"/{state,spool,log,munge}
chmod 700 "$dir/munge"
host=$(hostname -s)
# Ports from the folder's name hash, so parallel test runs do not collide.
base=$(( 20000 + $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 20000 ))
cat > "$dir/slurm.conf" <<CONF
ClusterName=autotune-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
if [ -r /etc/munge/munge.key ]; then
  cp /etc/munge/munge.key "$dir/munge/munge.key"
else
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 2>/dev/null
fi
chmod 600 "$dir/munge/munge.key"
"$sbin/munged" -f --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" \
  || { echo "munged did not start" >&2; exit 3; }
export SLURM_CONF="$dir/slurm.conf"
"$sbin/slurmctld" -D -i >"$dir/log/slurmctld.out" 2>&1 &
"$sbin/slurmd" -D >"$dir/log/slurmd.out" 2>&1 &
for _ in $(seq 1 100); do
  if sinfo -h -o '%t' 2>/dev/null | grep -qE '^idle'; then
    echo "$dir/slurm.conf"
    exit 0
  fi
  sleep 0.2
done
echo "slurm did not become ready; see $dir/log" >&2
stop
exit 3
