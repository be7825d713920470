#!/usr/bin/env bash
# A journaled ext4 of its own for the benchmark's files (a loop-mounted image),
# so that runs do not depend on what the machine's own file system has done
# in the last minutes. Needs root.
#
#   scripts/bench-fs.sh start    create (first time) and mount; print TMPDIR=<mount>
#   scripts/bench-fs.sh stop     unmount and delete the image
#
# Why: an ext4 without a journal (as on the development VMs) skips inodes freed
# in the last 60 s, or 5 minutes while their inode table block is dirty, and
# reads the inode table for each one it skips, on every file it creates. A
# benchmark run deletes what it stored, so the next run (or the next phase of
# any target) paid hundreds of µs of kernel time per file created, more or
# less depending on which block group its directory landed in. A file system
# with a journal never makes that check, and it is what a deployment has.
#
# Use:
#   export TMPDIR=$(scripts/bench-fs.sh start | sed -n 's/^TMPDIR=//p')
#   npm run bench
#
# Environment:
#   BENCH_FS_IMAGE   the image file (default /var/tmp/media-bench-fs.img; sparse)
#   BENCH_FS_SIZE    its size (default 40G; the benchmark keeps one scenario's files, ~12 GB at most)
#   BENCH_FS_MOUNT   where it is mounted (default /mnt/media-bench-fs)
set -euo pipefail

image=${BENCH_FS_IMAGE:-/var/tmp/media-bench-fs.img}
size=${BENCH_FS_SIZE:-40G}
mount_point=${BENCH_FS_MOUNT:-/mnt/media-bench-fs}

log() { echo "bench-fs: $*" >&2; }

case ${1:-} in
  start)
    if ! mountpoint -q "$mount_point"; then
      if [[ ! -f $image ]]; then
        truncate -s "$size" "$image"
        # Inode tables and journal written now, not by a kernel thread during the first runs.
        mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$image"
        log "created $image ($size, ext4 with a journal)"
      fi
      mkdir -p "$mount_point"
      mount -o loop "$image" "$mount_point"
      chmod 1777 "$mount_point"
      log "mounted at $mount_point"
    fi
    echo "TMPDIR=$mount_point"
    ;;
  stop)
    if mountpoint -q "$mount_point"; then umount "$mount_point"; fi
    rm -f "$image"
    log "unmounted and removed $image"
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
