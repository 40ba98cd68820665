#!/usr/bin/env bash
# The first command's cost, side by side on this machine: the build that
# scripts/run.sh does at REV (default feb0f96, before it built only the main
# job's targets) against the working tree's, each from an empty build folder
# with the packages already installed; then, with --fresh-debian, the whole
# first scripts/run.sh (installs, build, tuning) on a clean clone inside a
# fresh Debian 12 made by debootstrap (needs root and the network; minutes).
#   bench/first_run.sh [REV] [--fresh-debian]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-feb0f96}
fresh=${2:-}
work=$(mktemp -d /tmp/autotune_first_run.XXXXXX)
trap 'git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
seconds() { local t0=$SECONDS; "$@" >"$work/log" 2>&1 || { tail -20 "$work/log"; exit 1; }; echo $((SECONDS - t0)); }
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "tree: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'); before: $rev"
git worktree add --detach "$work/old" "$rev" >/dev/null 2>&1
j=$(nproc)
old_all=$(seconds bash -c "cmake -S '$work/old' -B '$work/b_old_all' -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build '$work/b_old_all' -j $j")
old_tool=$(seconds bash -c "cmake -S '$work/old' -B '$work/b_old_tool' -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build '$work/b_old_tool' -j $j --target autotune")
new_main=$(seconds bash -c "cmake -S . -B '$work/b_new' -DCMAKE_BUILD_TYPE=Release && cmake --build '$work/b_new' -j $j --target autotune_main")
warnings=$(grep -c 'warning:' "$work/log" || true)
echo "build, before: everything (what run.sh built) ${old_all} s; the autotune target alone ${old_tool} s"
echo "build, now:    autotune_main (what run.sh builds) ${new_main} s, ${warnings} compiler warnings"
echo "ratio: ${old_all}/${new_main} = $(python3 -c "print(f'{$old_all/$new_main:.1f}x')") faster than before's first build"
if [ "$fresh" = "--fresh-debian" ]; then
  root=$work/deb12
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1
  git clone -q . "$root/autotune"
  mount -t proc proc "$root/proc"
  trap 'umount "$root/proc" 2>/dev/null || true; git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  t0=$SECONDS
  chroot "$root" /bin/bash -c "cd /tmp && /autotune/scripts/run.sh" >"$work/run.log" 2>&1
  echo "fresh Debian 12 (debootstrap minbase), first scripts/run.sh from a clean clone: $((SECONDS - t0)) s in all"
  grep -E '^(autotune: building|best:|trials:)' "$work/run.log" || tail -20 "$work/run.log"
fi
