//! The guests' `/init` scripts.

/// `/init`: mount what tracing needs, run the tests named on the kernel command line,
/// print the verdict, power off. No tmpfs on `/tmp`: the initramfs is in memory and
/// writable already, and a workspace under `/tmp` (a CI clone) has its fixtures copied there,
/// which a mount would hide.
pub const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs nodev /sys/kernel/tracing
mount -t debugfs nodev /sys/kernel/debug
ip link set lo up
# An ext4 filesystem for the filesystem tools' tests (add_ext4).
for m in crc16 crc32c_generic mbcache jbd2 ext4 loop; do
  [ -f /lib/modules/$(uname -r)/$m.ko ] && insmod /lib/modules/$(uname -r)/$m.ko
done
if [ -f /ext4.img ]; then
  # devtmpfs makes the loop nodes a moment after the module loads.
  for i in $(seq 50); do [ -b /dev/loop0 ] && break; sleep 0.1; done
  mkdir -p /mnt/ext4
  losetup /dev/loop0 /ext4.img && mount -t ext4 /dev/loop0 /mnt/ext4 || dmesg | tail -5 | sed 's/^/dmesg: /'
  # O_DIRECT block I/O (biolatency's tests): the initramfs root has no block device.
  export TRACEKIT_BLOCK_DIR=/mnt/ext4
fi
# xfs and btrfs (XFS_BTRFS_MODULES), for their functions: no filesystem of theirs is made.
for m in libcrc32c xfs xor raid6_pq zstd_compress btrfs; do
  [ -f /lib/modules/$(uname -r)/$m.ko ] && insmod /lib/modules/$(uname -r)/$m.ko
done
# An md RAID1 array, /dev/md0, on /dev/loop1 and /dev/loop2 (8 MiB each), built through
# sysfs without metadata (Documentation/admin-guide/md.rst) and started in sync.
if insmod /lib/modules/$(uname -r)/md-mod.ko && insmod /lib/modules/$(uname -r)/raid1.ko; then
  dd if=/dev/zero of=/md1.img bs=1M count=8 2>/dev/null
  dd if=/dev/zero of=/md2.img bs=1M count=8 2>/dev/null
  losetup /dev/loop1 /md1.img && losetup /dev/loop2 /md2.img
  echo md0 > /sys/module/md_mod/parameters/new_array
  md=/sys/block/md0/md
  echo none > $md/metadata_version
  echo raid1 > $md/level
  echo 2 > $md/raid_disks
  for n in 1 2; do
    echo 7:$n > $md/new_dev
    echo $((n - 1)) > $md/dev-loop$n/slot
    echo 8192 > $md/dev-loop$n/size
  done
  echo 8192 > $md/component_size
  echo none > $md/resync_start
  echo active > $md/array_state || dmesg | grep -E 'md|raid' | tail -5 | sed 's/^/dmesg: /'
fi
filters=$(sed -n 's/.*tracekit.tests=\([^ ]*\).*/\1/p' /proc/cmdline | tr ',' ' ')
export TRACEKIT_VM_EMULATED=$(sed -n 's/.*tracekit.emulated=\([01]\).*/\1/p' /proc/cmdline)
echo "TRACEKIT-VM-KERNEL $(uname -r)"
TRACEKIT_BIN=/bin/tracekit TRACEKIT_FIXTURES=/fixtures /bin/integration --test-threads=1 $filters
if [ $? -eq 0 ]; then echo "TRACEKIT-VM-RESULT PASS"; else echo "TRACEKIT-VM-RESULT FAIL"; fi
poweroff -f
"#;

/// `/init` of [`smoke`]: the static binary's `profile -a` and `count` on the guest's kernel.
pub const SMOKE_INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs nodev /sys/kernel/tracing
mount -t debugfs nodev /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
echo "TRACEKIT-VM-KERNEL $(uname -r)"
ok=1
# Something on CPU to sample: an idle guest gives a whole-machine profile no samples at all.
(while :; do :; done) &
burner=$!
tracekit profile -a -d 2 -o /tmp/profile.folded || ok=0
kill $burner
echo "profile -a -d 2: $(wc -l < /tmp/profile.folded) stacks"
[ -s /tmp/profile.folded ] || ok=0
tracekit count raw_syscalls:sys_enter -d 1 > /tmp/count.txt || ok=0
cat /tmp/count.txt
grep -q 'raw_syscalls:sys_enter' /tmp/count.txt || ok=0
if [ $ok -eq 1 ]; then echo "TRACEKIT-VM-RESULT PASS"; else echo "TRACEKIT-VM-RESULT FAIL"; fi
poweroff -f
"#;
