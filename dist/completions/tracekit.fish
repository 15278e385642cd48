# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_tracekit_global_optspecs
    string join \n v/verbose h/help V/version
end

function __fish_tracekit_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_tracekit_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_tracekit_using_subcommand
    set -l cmd (__fish_tracekit_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c tracekit -n "__fish_tracekit_needs_command" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_needs_command" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_needs_command" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "profile" -d 'Sample on-CPU stacks (perf record -g + flame graph, bcc profile)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "bitesize" -d 'Block I/O size histograms per process (perf-tools/bcc bitesize)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "biolatency" -d 'Block I/O latency histogram, issue to completion (bcc biolatency)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "runqlat" -d 'Run queue latency histogram: how long runnable tasks wait for a CPU (bcc runqlat)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "syscount" -d 'Count syscalls by name, with latency or failures (bcc syscount)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "funccount" -d 'Count calls of kernel or user functions (bcc funccount)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "funclatency" -d 'Histogram of a function\'s latency, entry to return (bcc funclatency)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "execsnoop" -d 'Print each new program run with its arguments and parent (bcc execsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "exitsnoop" -d 'Print each process exit with its age and exit code or signal (bcc exitsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "threadsnoop" -d 'Print each new thread with the process that created it (bcc threadsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "setuids" -d 'Print each setuid, setreuid, setresuid and setfsuid with the ids it leaves (bpftrace setuids)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "killsnoop" -d 'Print each signal sent by kill(2) with its target and result (bcc killsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "oomkill" -d 'Print each process the OOM killer kills, and who triggered it (bcc oomkill)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "pidpersec" -d 'Count new processes and threads (forks) per interval (bpftrace pidpersec)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "sigsnoop" -d 'Print each signal generated, with its sender, target and result (bcc sigsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "writeback" -d 'Print each writeback of dirty pages with its device, pages, reason and latency (bpftrace writeback.bt)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "opensnoop" -d 'Print each file open with its path and fd or errno (bcc opensnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "statsnoop" -d 'Print each stat of a path with its result (bcc statsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "syncsnoop" -d 'Print each sync, fsync, fdatasync, syncfs, sync_file_range and msync (bcc syncsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "mountsnoop" -d 'Print each mount(2) with its source, target, type and flags (bcc mountsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "vfsstat" -d 'Count VFS reads, writes, fsyncs, opens and creates (bcc vfsstat)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "vfscount" -d 'Count calls of each kernel VFS function, vfs_* (bcc vfscount)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "fsdist" -d 'Filesystem operation latency histograms: read, write, open, fsync, getattr (libbpf-tools fsdist)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "ext4dist" -d 'ext4 operation latency histograms: read, write, open, fsync, getattr (libbpf-tools ext4dist)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "xfsdist" -d 'xfs operation latency histograms: read, write, open, fsync, getattr (libbpf-tools xfsdist)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "btrfsdist" -d 'btrfs operation latency histograms: read, write, open, fsync, getattr (libbpf-tools btrfsdist)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "nfsdist" -d 'nfs operation latency histograms: read, write, open, fsync, getattr (libbpf-tools nfsdist)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "cachestat" -d 'Page cache hits, misses and dirties per interval (bcc cachestat)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "fsslower" -d 'Print each filesystem read and write slower than a threshold, with the file (libbpf-tools fsslower)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "ext4slower" -d 'Print each ext4 read and write slower than a threshold, with the file (libbpf-tools ext4slower)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "xfsslower" -d 'Print each XFS read and write slower than a threshold, with the file (libbpf-tools xfsslower)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "btrfsslower" -d 'Print each btrfs read and write slower than a threshold, with the file (libbpf-tools btrfsslower)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "nfsslower" -d 'Print each NFS read and write slower than a threshold, with the file (libbpf-tools nfsslower)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "filelife" -d 'Print each file deleted with its age since it was created (bcc filelife)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "dcsnoop" -d 'Print each failed dentry cache lookup with its name (bcc dcsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "filetop" -d 'File reads and writes by thread and file: counts and KiB, busiest first (libbpf-tools filetop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "biosnoop" -d 'Print each block I/O with its disk, size and latency (bcc biosnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "biotop" -d 'Block I/O by process and disk: I/Os and bytes, busiest first (bcc biotop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "biopattern" -d 'Random and sequential block I/O per disk, in percent (libbpf-tools biopattern)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "biostacks" -d 'Block I/O latency histograms per initiating kernel stack (bcc biostacks)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "cpudist" -d 'On-CPU (or off-CPU) time per scheduling, as a histogram (bcc cpudist)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "runqslower" -d 'Print each run queue wait longer than a threshold (bcc runqslower)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "runqlen" -d 'Run queue length histogram, sampled on every CPU (bcc runqlen)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "hardirqs" -d 'Time in hardware interrupt handlers, per interrupt (bcc hardirqs)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "softirqs" -d 'Time in softirq handlers, per vector (bcc softirqs)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "drsnoop" -d 'Print each direct memory reclaim with its latency and pages freed (bcc drsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "slabratetop" -d 'Kernel slab allocations by cache: allocations and bytes, busiest first (bcc slabratetop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "memleak" -d 'Outstanding allocations by stack, user (libc) or kernel (bcc memleak)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "swapin" -d 'Count pages swapped in, per process (bcc swapin)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "tcpstates" -d 'Print each TCP state change with addresses and ports (libbpf-tools tcpstates)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "tcpconnect" -d 'Print each TCP connect() with its process, addresses and port (libbpf-tools tcpconnect)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "tcpaccept" -d 'Print each TCP connection accepted, with the accepting process, addresses and ports (libbpf-tools tcpaccept)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "tcpconnlat" -d 'Print each TCP connect\'s latency, SYN sent to connection established (libbpf-tools tcpconnlat)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "tcpretrans" -d 'Print each TCP retransmission with addresses, ports and state (libbpf-tools tcpretrans)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "tcpdrop" -d 'Print each IP packet the kernel drops, with the reason and kernel stack (bcc tcpdrop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "tcprtt" -d 'TCP round-trip time histogram, from received segments (libbpf-tools tcprtt)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "tcplife" -d 'Print each TCP connection when it closes: addresses, ports, bytes, lifetime (libbpf-tools tcplife)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "solisten" -d 'Print each TCP listen() with its process, address, port and backlog (libbpf-tools solisten)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "tcpsynbl" -d 'TCP SYN backlog: accept queue length histograms per queue limit (bcc tcpsynbl)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "bindsnoop" -d 'Print each IPv4 socket bind with its port, address and result (bcc bindsnoop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "tcptop" -d 'TCP traffic by process and connection: KiB received and sent, busiest first (libbpf-tools tcptop)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "capable" -d 'Print each kernel capability check with its process and capability (bcc capable)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "klockstat" -d 'Kernel lock contention by lock: waits and wait time (perf lock contention -b, bcc klockstat)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "futexctn" -d 'Futex wait time per futex address and thread: user-space lock contention (libbpf-tools futexctn)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "bashreadline" -d 'Print the command lines interactive bash shells read (bcc bashreadline)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "gethostlatency" -d 'Print each getaddrinfo() host lookup with its latency (bcc gethostlatency)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "stat" -d 'Count events with perf counters: software, hardware, tracepoints (perf stat)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "offcpu" -d 'Time spent blocked, by stack (bcc offcputime)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "wakeuptime" -d 'Time blocked, by the kernel stack that woke the task (bcc wakeuptime)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "offwaketime" -d 'Time blocked, by the blocked stack and its waker\'s stack (bcc offwaketime)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "report" -d 'Re-render a saved JSON profile or histogram as a report, flame graph, heat map, pprof, speedscope or Chrome trace'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "diff" -d 'Compare two profiles: differential flame graph and the functions that grew and shrank most'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "exporter" -d 'Serve kernel aggregates to Prometheus and CPU profiles as pprof (ebpf_exporter)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "count" -d 'Count events, per event and group (perf stat -e, bpftrace count())'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "hist" -d 'Histogram (log2 or linear) or counts of an event\'s field, per group, in the kernel'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "trace" -d 'Print each event with its fields, as it happens (perf trace, bcc trace)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "stackcount" -d 'Count the stacks that led to an event (bcc stackcount)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "top" -d 'Live view of the hottest functions, or of any event\'s counts (perf top)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "list" -d 'List events and probes: hardware, software, tracepoints, kernel functions, USDT (perf list)'
complete -c tracekit -n "__fish_tracekit_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s F -l frequency -d 'Sample at HZ samples per second per CPU' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l call-graph -d 'How to walk user stacks: `dwarf` unwinds in the kernel from .eh_frame tables (the default where the kernel can), `fp` follows frame pointers' -r -f -a "fp\t'Follow frame pointers (the kernel\'s own walk)'
dwarf\t'Unwind in the kernel from .eh_frame / .debug_frame tables'"
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l unwind-table-budget -d 'Kernel memory for the DWARF unwinder\'s tables, in MiB (1 to 512); binaries whose tables do not fit are walked by frame pointers (`-v` names them)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l top -d 'Rows in the text report' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l by -d 'Also report samples by KEY (comma-separated): `line` adds the hottest source lines of the hottest functions to the text report; `cgroup` splits stacks by the thread\'s cgroup v2 path, the root frame of folded stacks and flame graphs' -r -f -a "line\t'The source line (file:line, from DWARF) of the instruction each sample ran'
cgroup\t'The cgroup v2 path of the sampled thread (container, systemd service), counted in the kernel: the root frame of folded stacks and flame graphs, a Cgroup column in the report, a `cgroup` field in JSON'"
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l stack-storage-size -d 'Distinct stacks the kernel keeps, 1 to 134217728; each costs ~1 KiB of kernel memory, allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l count-map-size -d 'Distinct (pid, comm, stacks) keys the kernel counts, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l debuginfod-timeout -d 'The most a run waits for debuginfod servers, over all requests [default: $DEBUGINFOD_TIMEOUT, else 5]' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s K -l kernel-stack -d 'Record kernel stacks only (the default records both)'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s U -l user-stack -d 'Record user stacks only'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l no-interpreters -d 'Keep interpreters\' eval loops as native frames (`_PyEval_EvalFrameDefault`) instead of the Python functions they run'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l include-idle -d 'Also count samples of idle CPUs (the swapper task, pid 0)'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l no-inline -d 'Do not show inlined functions as frames (skips reading DWARF line tables)'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l heatmap -d 'Count samples per 20 ms time slice in the kernel, for subsecond heat maps (.heatmap.svg) and `tracekit report --from/--to`; the JSON keeps the slices'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l inverted -d 'Draw the flame graph as an icicle graph: roots at the top, callees below'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -l offline -d 'Never ask debuginfod servers ($DEBUGINFOD_URLS) for debug files; use local ones only'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand profile" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -l disk -d 'Only I/O to this disk (a name under /sys/block, e.g. vda, nvme0n1)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand bitesize" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -l disk -d 'Only I/O to this disk (a name under /sys/block)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -l per-disk -d 'One histogram per disk'
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -l queued -d 'Measure from insertion in the I/O queue (block_rq_insert) instead of issue to the device'
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand biolatency" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -l tids -d 'One histogram per thread (bcc runqlat -L; tracekit\'s -L is syscount\'s --latency)'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlat" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -l by -d 'Also group by process name or pid' -r -f -a "comm\t'The calling thread\'s command name'
pid\t'The calling process'"
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -l top -d 'Show the N most frequent' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -s L -l latency -d 'Show total and average time in each syscall (microseconds)'
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -s x -l failures -d 'Count only calls that returned an error'
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand syscount" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -l by -d 'Also group by process name or pid' -r -f -a "comm\t'The calling thread\'s command name'
pid\t'The calling process'"
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -l top -d 'Show the N most called' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand funccount" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand funclatency" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand execsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s x -l failures -d 'Only exits with a non-zero code or by a signal'
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -l threaded -d 'Show each thread\'s exit, not only the process\'s (the last thread\'s)'
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand exitsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand threadsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s x -l failures -d 'Only calls that failed (RET < 0; setfsuid never does)'
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand setuids" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s x -l failures -d 'Only kill(2) calls that failed'
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand killsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand oomkill" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand pidpersec" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s s -l signal -d 'Only this signal, by number or name (9, KILL, SIGKILL)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s x -l failures -d 'Only signals that were not delivered (RESULT not 0)'
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s k -l kill -d 'Only signals sent by kill(2) (si_code SI_USER)'
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -l signal-name -d 'Show SIG by name (SIGKILL) instead of number'
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand sigsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand writeback" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand writeback" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand writeback" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand writeback" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand writeback" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand writeback" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand writeback" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand writeback" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand writeback" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s x -l failures -d 'Only opens that failed'
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand opensnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s x -l failures -d 'Only stats that failed'
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand statsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand syncsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand mountsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -l by -d 'Also group by process name or pid' -r -f -a "comm\t'The calling thread\'s command name'
pid\t'The calling process'"
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfsstat" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -l by -d 'Also group by process name or pid' -r -f -a "comm\t'The calling thread\'s command name'
pid\t'The calling process'"
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -l top -d 'Show the N most called' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand vfscount" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -l fs -d 'The filesystem: ext4 (the default), xfs, btrfs or nfs (libbpf-tools -t)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsdist" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4dist" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsdist" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsdist" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsdist" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand cachestat" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -l fs -d 'The filesystem: ext4 (the default), xfs, btrfs or nfs (libbpf-tools -t)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand fsslower" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand ext4slower" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand xfsslower" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand btrfsslower" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand nfsslower" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand filelife" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand dcsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -s r -l top -d 'Show the N busiest rows (bcc filetop -r)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -l regular -d 'Only regular files (libbpf-tools\' default; its -a counts every type)'
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand filetop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -l disk -d 'Only I/O to this disk (a name under /sys/block)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -s Q -l queued -d 'Measure from insertion in the I/O queue (block_rq_insert) instead of issue to the device'
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand biosnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -l disk -d 'Only I/O to this disk (a name under /sys/block)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -s r -l top -d 'Show the N busiest (bcc biotop -r)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand biotop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -l disk -d 'Only I/O to this disk (a name under /sys/block)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand biopattern" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -l disk -d 'Only I/O to this disk (a name under /sys/block)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -s Q -l queued -d 'Start at insertion in the I/O queue (block_rq_insert), with that stack, instead of issue to the device'
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand biostacks" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -s O -l offcpu -d 'Off-CPU time: from switching out to switching back in (bcc cpudist -O)'
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -l tids -d 'One histogram per thread (bcc cpudist -L)'
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand cpudist" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -l min-us -d 'Only waits of at least US microseconds (bcc runqslower\'s min_us)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -s P -l previous -d 'Also print the task that ran before (bcc runqslower -P)'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqslower" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -s F -l frequency -d 'Samples a second on each CPU (libbpf-tools runqlen -f)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -l cpus -d 'A histogram per CPU (bcc runqlen -C; tracekit\'s -C is hardirqs\' --count)'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand runqlen" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -s C -l count -d 'Count interrupts instead of timing them (bcc hardirqs -C)'
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -l dist -d 'A histogram of handler time per interrupt (bcc hardirqs -d; tracekit\'s -d is the duration)'
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand hardirqs" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -l unit -d 'Unit of the histogram' -r -f -a "ns\t'Nanoseconds'
us\t'Microseconds'
ms\t'Milliseconds'"
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -s C -l count -d 'Count softirqs instead of timing them (bcc softirqs -C)'
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -l dist -d 'A histogram of handler time per vector (bcc softirqs -d; tracekit\'s -d is the duration)'
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand softirqs" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand drsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand drsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand drsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand drsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand drsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand drsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand drsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand drsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand drsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand drsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -s r -l top -d 'Show the N busiest caches (bcc slabratetop -r)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand slabratetop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -l top -d 'Show the N stacks with the most bytes outstanding (bcc memleak -T)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -l older -d 'Only allocations at least MS milliseconds old (bcc memleak -o)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -s z -l min-size -d 'Only allocations of at least BYTES (bcc memleak -z)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -s Z -l max-size -d 'Only allocations of at most BYTES (bcc memleak -Z)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -l show-allocs -d 'Also list each allocation\'s address and size (bcc memleak -a)'
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -l kernel -d 'Kernel allocations also with -p or -- CMD: those made in its context'
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand memleak" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand swapin" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -l lport -d 'Only sockets with this local port' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -l rport -d 'Only sockets with this remote port' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpstates" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -l rport -d 'Only connects to this remote port (bcc -P)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnect" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -l lport -d 'Only connections accepted on this local port (bcc -P)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpaccept" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -l rport -d 'Only connects to this remote port' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpconnlat" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -l lport -d 'Only sockets with this local port' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -l rport -d 'Only sockets with this remote port' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpretrans" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpdrop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -l lport -d 'Only sockets with this local port (bcc -p)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -l rport -d 'Only sockets with this remote port (bcc -P)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -l ms -d 'Milliseconds instead of microseconds (bcc -m)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -l by-lport -d 'One histogram per local port'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -l by-rport -d 'One histogram per remote port'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcprtt" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -l lport -d 'Only connections with this local port' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -l rport -d 'Only connections with this remote port' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcplife" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand solisten" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand solisten" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand solisten" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand solisten" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand solisten" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand solisten" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand solisten" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand solisten" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand solisten" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand solisten" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -s 4 -l ipv4 -d 'Only IPv4 listeners (tcp_v4_syn_recv_sock)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -s 6 -l ipv6 -d 'Only IPv6 listeners (tcp_v6_syn_recv_sock)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcpsynbl" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s x -l failures -d 'Only binds that failed'
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand bindsnoop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s r -l top -d 'Show the N busiest connections (bcc tcptop -r)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -l sort -d 'Order the rows by (libbpf-tools tcptop -s)' -r -f -a "all\t'Bytes received and sent'
received\t'Bytes received'
sent\t'Bytes sent'"
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s 4 -l ipv4 -d 'Only IPv4 sockets (libbpf-tools tcptop -4)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s 6 -l ipv6 -d 'Only IPv6 sockets (libbpf-tools tcptop -6)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand tcptop" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -l all-checks -d 'Also checks made with CAP_OPT_NOAUDIT, which log no denial (bcc -v)'
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand capable" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -l by -d 'Also group by process name or pid' -r -f -a "comm\t'The calling thread\'s command name'
pid\t'The calling process'"
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -l top -d 'Show the N locks waited on longest' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -l stacks -d 'Print each wait with its lock, type, time and the waiting kernel stack'
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand klockstat" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -l top -d 'Show the N futexes waited on longest' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -l stacks -d 'Print each wait with its futex address, time and the waiting user stack'
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand futexctn" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -l shared -d 'The binary or library whose readline() bash calls (default /bin/bash)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand bashreadline" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -l libc -d 'The C library whose getaddrinfo() is probed (default libc, as the process maps it)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s n -l name -d 'Only tasks whose command name is COMM' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s t -l timestamp -d 'Print a TIME(s) column: seconds since tracing began'
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s T -l time -d 'Print a TIME column: the wall clock, HH:MM:SS'
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand gethostlatency" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -s e -l event -d 'Events: perf names (task-clock, page-faults, cycles, ...) and tracepoints (SYSTEM:EVENT, wildcards allowed); comma-separated or repeated' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -s I -d 'perf\'s interval flag, in milliseconds (same as -i MS/1000)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -l all -d 'Also show tracepoints that counted zero'
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand stat" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l min-us -d 'Only blocks of at least US microseconds' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l max-us -d 'Only blocks of at most US microseconds' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l state -d 'Only tasks that blocked in this state (default: any, preemption included)' -r -f -a "interruptible\t'TASK_INTERRUPTIBLE (S): waiting for an event, a timer, I/O readiness'
uninterruptible\t'TASK_UNINTERRUPTIBLE (D): waiting for disk I/O or a kernel lock'"
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l top -d 'Rows in the text report' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l call-graph -d 'How to walk user stacks: `dwarf` unwinds in the kernel from .eh_frame tables (the default where the kernel can), `fp` follows frame pointers' -r -f -a "fp\t'Follow frame pointers (the kernel\'s own walk)'
dwarf\t'Unwind in the kernel from .eh_frame / .debug_frame tables'"
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l unwind-table-budget -d 'Kernel memory for the DWARF unwinder\'s tables, in MiB (1 to 512); binaries whose tables do not fit are walked by frame pointers (`-v` names them)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l debuginfod-timeout -d 'The most a run waits for debuginfod servers, over all requests [default: $DEBUGINFOD_TIMEOUT, else 5]' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -s K -l kernel-stack -d 'Kernel stacks only (the default takes both)'
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -s U -l user-stack -d 'User stacks only'
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l no-interpreters -d 'Keep interpreters\' eval loops as native frames (`_PyEval_EvalFrameDefault`) instead of the Python functions they run'
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -l offline -d 'Never ask debuginfod servers ($DEBUGINFOD_URLS) for debug files; use local ones only'
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand offcpu" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -l min-us -d 'Only blocks of at least US microseconds' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -l max-us -d 'Only blocks of at most US microseconds' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -l top -d 'Rows in the text report' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -l debuginfod-timeout -d 'The most a run waits for debuginfod servers, over all requests [default: $DEBUGINFOD_TIMEOUT, else 5]' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -l offline -d 'Never ask debuginfod servers ($DEBUGINFOD_URLS) for debug files; use local ones only'
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand wakeuptime" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s m -l min-block-time -d 'Only blocks of at least US microseconds' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s M -l max-block-time -d 'Only blocks of at most US microseconds' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -l tid -d 'Only this thread blocking (bcc\'s -t; -t is --timestamp in tracekit)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -l top -d 'Rows in the text report' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -l call-graph -d 'How to walk user stacks: `dwarf` unwinds in the kernel from .eh_frame tables (the default where the kernel can), `fp` follows frame pointers' -r -f -a "fp\t'Follow frame pointers (the kernel\'s own walk)'
dwarf\t'Unwind in the kernel from .eh_frame / .debug_frame tables'"
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -l unwind-table-budget -d 'Kernel memory for the DWARF unwinder\'s tables, in MiB (1 to 512); binaries whose tables do not fit are walked by frame pointers (`-v` names them)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -l debuginfod-timeout -d 'The most a run waits for debuginfod servers, over all requests [default: $DEBUGINFOD_TIMEOUT, else 5]' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s f -l folded -d 'Print folded stacks (one line per stack pair, bcc\'s -f) instead of the report'
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s K -l kernel-stack -d 'Kernel stacks only (the default takes both)'
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s U -l user-stack -d 'User stacks only'
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -l no-interpreters -d 'Keep interpreters\' eval loops as native frames (`_PyEval_EvalFrameDefault`) instead of the Python functions they run'
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -l offline -d 'Never ask debuginfod servers ($DEBUGINFOD_URLS) for debug files; use local ones only'
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand offwaketime" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand report" -s o -l output -d 'Write FILE in the format its extension names; may be given several times. Without it, the text report goes to stdout' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand report" -l from -d 'Only the samples from SECONDS on (needs time slices: profile --heatmap)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand report" -l to -d 'Only the samples before SECONDS (needs time slices: profile --heatmap)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand report" -l top -d 'Rows in the text report' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand report" -l inverted -d 'Draw flame graphs as icicle graphs: roots at the top, callees below'
complete -c tracekit -n "__fish_tracekit_using_subcommand report" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand report" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand report" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand diff" -s o -l output -d 'Write the differential flame graph (.svg) or its folded input (.folded) to FILE' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand diff" -l top -d 'Rows in each half of the table' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand diff" -l normalize -d 'Scale BEFORE\'s counts to AFTER\'s total (runs of different length or load)'
complete -c tracekit -n "__fish_tracekit_using_subcommand diff" -l inverted -d 'Draw an icicle graph: roots at the top, callees below'
complete -c tracekit -n "__fish_tracekit_using_subcommand diff" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand diff" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand diff" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand exporter" -s c -l config -d 'The config file (TOML, or YAML when it ends in .yaml or .yml); without it, the built-in set' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand exporter" -l listen -d 'Listen on ADDR:PORT [default: the config\'s listen, else 127.0.0.1:9435]' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand exporter" -l push -d 'Push a CPU profile of the machine every interval to a Pyroscope-compatible server: POST URL/ingest, pprof, as tracekit.cpu{hostname=...}' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand exporter" -l push-interval -d 'Seconds between pushes, each a profile of that long (1 to 3600) [default: 15]' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand exporter" -l check -d 'Check the config and compile its metrics for this kernel, then exit'
complete -c tracekit -n "__fish_tracekit_using_subcommand exporter" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand exporter" -s h -l help -d 'Print help'
complete -c tracekit -n "__fish_tracekit_using_subcommand exporter" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -l by -d 'Also group by these fields or pid, tid, cpu, comm, cgroup (the cgroup v2 path); str(FIELD), argv[I]: the string a pointer points to, 32 bytes at most; up to 8 keys, a string taking the room of 4, a 16-byte address 2 (a socket\'s skc_portpair is one key shown as two columns, lport and rport); ftype(MODE): an inode\'s i_mode shown as R (regular file), S (socket) or O (other); follows(STREAM,POS,LEN): 1 when POS is where the previous event of the same STREAM ended (its POS + LEN), 0 when not, 2 for a stream\'s first event (biopattern\'s follows(dev,sector,nr_sector))' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -l filter -d 'Only events for which EXPR holds (perf/ftrace filter syntax), evaluated in the kernel' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -l top -d 'Show only the N largest counts' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand count" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l value -d 'The field to histogram; without it, events are counted per group' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l by -d 'Group by these fields or pid, tid, cpu, comm, cgroup (one histogram per group); str(FIELD), argv[I]: the string a pointer points to, 32 bytes at most; up to 8 keys, a string taking the room of 4, a 16-byte address 2 (a socket\'s skc_portpair is one key shown as two columns, lport and rport); ftype(MODE): an inode\'s i_mode shown as R (regular file), S (socket) or O (other); follows(STREAM,POS,LEN): 1 when POS is where the previous event of the same STREAM ended (its POS + LEN), 0 when not, 2 for a stream\'s first event (biopattern\'s follows(dev,sector,nr_sector))' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l filter -d 'Only events for which EXPR holds (perf/ftrace filter syntax), evaluated in the kernel' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l linear -d 'A linear histogram from MIN to MAX in buckets of STEP instead of log2' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l precision -d 'Sub-bucket bits of --percentiles\' histogram, 0 to 7: each power of two is split into 2^K buckets, at most 100/2^K % wide' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l percentiles -d 'Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count and mean; each percentile is the bucket it falls in'
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand hist" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l filter -d 'Only events for which EXPR holds (perf/ftrace filter syntax), evaluated in the kernel' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l print -d 'Fields to print with each event (kstack, ustack: its stacks; str(FIELD), str(argN), str(retval), argv[I]: the string a pointer points to, 32 bytes at most; task->A->B, (struct S *)FIELD->A, PARAM->A->B, sock(FD)->A and file(FD)->A (the socket or file at descriptor field FD, e.g. sock(ret) of sys_exit_accept4): kernel structs through BTF (a struct of up to 32 bytes as raw bytes, e.g. skc_v6_daddr); str(PATH), str(PATH,N): the string a path\'s last char * points to, N bytes at most; latency and start.X, e.g. start.str(arg0), at a return probe: the time since its entry and the entry\'s X (a string of 16 bytes at most leaves room for two numbers))' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l call-graph -d 'How to walk user stacks: `dwarf` unwinds in the kernel from .eh_frame tables (the default where the kernel can), `fp` follows frame pointers' -r -f -a "fp\t'Follow frame pointers (the kernel\'s own walk)'
dwarf\t'Unwind in the kernel from .eh_frame / .debug_frame tables'"
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l unwind-table-budget -d 'Kernel memory for the DWARF unwinder\'s tables, in MiB (1 to 512); binaries whose tables do not fit are walked by frame pointers (`-v` names them)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l debuginfod-timeout -d 'The most a run waits for debuginfod servers, over all requests [default: $DEBUGINFOD_TIMEOUT, else 5]' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -s K -l kernel-stack -d 'Print the kernel stack of each event'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -s U -l user-stack -d 'Print the user stack of each event'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l no-interpreters -d 'Keep interpreters\' eval loops as native frames (`_PyEval_EvalFrameDefault`) instead of the Python functions they run'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -l offline -d 'Never ask debuginfod servers ($DEBUGINFOD_URLS) for debug files; use local ones only'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand trace" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l filter -d 'Only events for which EXPR holds' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l top -d 'Rows in the text report' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l call-graph -d 'How to walk user stacks: `dwarf` unwinds in the kernel from .eh_frame tables (the default where the kernel can), `fp` follows frame pointers' -r -f -a "fp\t'Follow frame pointers (the kernel\'s own walk)'
dwarf\t'Unwind in the kernel from .eh_frame / .debug_frame tables'"
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l unwind-table-budget -d 'Kernel memory for the DWARF unwinder\'s tables, in MiB (1 to 512); binaries whose tables do not fit are walked by frame pointers (`-v` names them)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -s d -l duration -d 'Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -s i -l interval -d 'Also print what was gathered in each interval of SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -s o -l output -d 'Write the result to FILE, in the format its extension names (.txt .folded .svg .json; stack profiles also .pb.gz .heatmap.svg .speedscope.json .trace.json); may be given several times (profiles, histograms, counts); for histograms with -i, .svg is a heat map (one column per interval) and .json keeps the intervals for `tracekit report`' -r -F
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l debuginfod-timeout -d 'The most a run waits for debuginfod servers, over all requests [default: $DEBUGINFOD_TIMEOUT, else 5]' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -s K -l kernel-stack -d 'Kernel stacks only (the default takes both)'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -s U -l user-stack -d 'User stacks only'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l no-interpreters -d 'Keep interpreters\' eval loops as native frames (`_PyEval_EvalFrameDefault`) instead of the Python functions they run'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l json -d 'Print JSON on stdout instead of text'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -l offline -d 'Never ask debuginfod servers ($DEBUGINFOD_URLS) for debug files; use local ones only'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand stackcount" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -s F -l frequency -d 'Sample at HZ samples per second per CPU' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -s e -l event -d 'Count this probe instead of sampling CPUs (a tracepoint or function probe)' -r -f -a "tracepoint:\t'tracepoint'
t:\t'tracepoint'
rawtracepoint:\t'rawtracepoint'
rt:\t'rawtracepoint'
kprobe:\t'kprobe'
k:\t'kprobe'
kretprobe:\t'kretprobe'
kr:\t'kretprobe'
fentry:\t'fentry'
f:\t'fentry'
kfunc:\t'fentry'
fexit:\t'fexit'
fr:\t'fexit'
kretfunc:\t'fexit'
uprobe:\t'uprobe'
u:\t'uprobe'
uretprobe:\t'uretprobe'
ur:\t'uretprobe'
usdt:\t'usdt'
U:\t'usdt'
software:\t'software'
s:\t'software'
hardware:\t'hardware'
h:\t'hardware'"
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -l sort -d 'Group by these keys: sym, dso, comm, pid (comm and pid with -e)' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -l top -d 'Rows shown' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -s i -l interval -d 'Refresh every SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -s d -l duration -d 'Stop after SECONDS' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -s p -l pid -d 'Trace only these processes (comma-separated pids); ends when they have all exited' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -l max-groups -d 'Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728; allocated up front' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -l max-in-flight -d 'Requests or calls in flight the kernel tracks for latencies, 1 to 134217728' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -l debuginfod-timeout -d 'The most a run waits for debuginfod servers, over all requests [default: $DEBUGINFOD_TIMEOUT, else 5]' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -s a -l all-cpus -d 'Trace every process on every CPU (the default)'
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -l kprobe -d 'Probe kernel functions with kprobes, never fentry/fexit'
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -l fentry -d 'Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes'
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -l offline -d 'Never ask debuginfod servers ($DEBUGINFOD_URLS) for debug files; use local ones only'
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand top" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand list" -l fields -d 'Show the fields of PROBE (a tracepoint, function or USDT probe) with their types' -r -f -a "tracepoint:\t'tracepoint'
t:\t'tracepoint'
rawtracepoint:\t'rawtracepoint'
rt:\t'rawtracepoint'
kprobe:\t'kprobe'
k:\t'kprobe'
kretprobe:\t'kretprobe'
kr:\t'kretprobe'
fentry:\t'fentry'
f:\t'fentry'
kfunc:\t'fentry'
fexit:\t'fexit'
fr:\t'fexit'
kretfunc:\t'fexit'
uprobe:\t'uprobe'
u:\t'uprobe'
uretprobe:\t'uretprobe'
ur:\t'uretprobe'
usdt:\t'usdt'
U:\t'usdt'
software:\t'software'
s:\t'software'
hardware:\t'hardware'
h:\t'hardware'"
complete -c tracekit -n "__fish_tracekit_using_subcommand list" -s p -l pid -d 'Resolve USDT binaries in this process\'s maps; `list usdt -p PID` lists the probes of every file it maps' -r
complete -c tracekit -n "__fish_tracekit_using_subcommand list" -s v -l verbose -d 'Say more: -v prints timings and own CPU time, -vv debug logs'
complete -c tracekit -n "__fish_tracekit_using_subcommand list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tracekit -n "__fish_tracekit_using_subcommand list" -s V -l version -d 'Print version'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "profile" -d 'Sample on-CPU stacks (perf record -g + flame graph, bcc profile)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "bitesize" -d 'Block I/O size histograms per process (perf-tools/bcc bitesize)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "biolatency" -d 'Block I/O latency histogram, issue to completion (bcc biolatency)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "runqlat" -d 'Run queue latency histogram: how long runnable tasks wait for a CPU (bcc runqlat)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "syscount" -d 'Count syscalls by name, with latency or failures (bcc syscount)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "funccount" -d 'Count calls of kernel or user functions (bcc funccount)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "funclatency" -d 'Histogram of a function\'s latency, entry to return (bcc funclatency)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "execsnoop" -d 'Print each new program run with its arguments and parent (bcc execsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "exitsnoop" -d 'Print each process exit with its age and exit code or signal (bcc exitsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "threadsnoop" -d 'Print each new thread with the process that created it (bcc threadsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "setuids" -d 'Print each setuid, setreuid, setresuid and setfsuid with the ids it leaves (bpftrace setuids)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "killsnoop" -d 'Print each signal sent by kill(2) with its target and result (bcc killsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "oomkill" -d 'Print each process the OOM killer kills, and who triggered it (bcc oomkill)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "pidpersec" -d 'Count new processes and threads (forks) per interval (bpftrace pidpersec)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "sigsnoop" -d 'Print each signal generated, with its sender, target and result (bcc sigsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "writeback" -d 'Print each writeback of dirty pages with its device, pages, reason and latency (bpftrace writeback.bt)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "opensnoop" -d 'Print each file open with its path and fd or errno (bcc opensnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "statsnoop" -d 'Print each stat of a path with its result (bcc statsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "syncsnoop" -d 'Print each sync, fsync, fdatasync, syncfs, sync_file_range and msync (bcc syncsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "mountsnoop" -d 'Print each mount(2) with its source, target, type and flags (bcc mountsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "vfsstat" -d 'Count VFS reads, writes, fsyncs, opens and creates (bcc vfsstat)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "vfscount" -d 'Count calls of each kernel VFS function, vfs_* (bcc vfscount)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "fsdist" -d 'Filesystem operation latency histograms: read, write, open, fsync, getattr (libbpf-tools fsdist)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "ext4dist" -d 'ext4 operation latency histograms: read, write, open, fsync, getattr (libbpf-tools ext4dist)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "xfsdist" -d 'xfs operation latency histograms: read, write, open, fsync, getattr (libbpf-tools xfsdist)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "btrfsdist" -d 'btrfs operation latency histograms: read, write, open, fsync, getattr (libbpf-tools btrfsdist)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "nfsdist" -d 'nfs operation latency histograms: read, write, open, fsync, getattr (libbpf-tools nfsdist)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "cachestat" -d 'Page cache hits, misses and dirties per interval (bcc cachestat)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "fsslower" -d 'Print each filesystem read and write slower than a threshold, with the file (libbpf-tools fsslower)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "ext4slower" -d 'Print each ext4 read and write slower than a threshold, with the file (libbpf-tools ext4slower)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "xfsslower" -d 'Print each XFS read and write slower than a threshold, with the file (libbpf-tools xfsslower)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "btrfsslower" -d 'Print each btrfs read and write slower than a threshold, with the file (libbpf-tools btrfsslower)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "nfsslower" -d 'Print each NFS read and write slower than a threshold, with the file (libbpf-tools nfsslower)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "filelife" -d 'Print each file deleted with its age since it was created (bcc filelife)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "dcsnoop" -d 'Print each failed dentry cache lookup with its name (bcc dcsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "filetop" -d 'File reads and writes by thread and file: counts and KiB, busiest first (libbpf-tools filetop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "biosnoop" -d 'Print each block I/O with its disk, size and latency (bcc biosnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "biotop" -d 'Block I/O by process and disk: I/Os and bytes, busiest first (bcc biotop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "biopattern" -d 'Random and sequential block I/O per disk, in percent (libbpf-tools biopattern)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "biostacks" -d 'Block I/O latency histograms per initiating kernel stack (bcc biostacks)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "cpudist" -d 'On-CPU (or off-CPU) time per scheduling, as a histogram (bcc cpudist)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "runqslower" -d 'Print each run queue wait longer than a threshold (bcc runqslower)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "runqlen" -d 'Run queue length histogram, sampled on every CPU (bcc runqlen)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "hardirqs" -d 'Time in hardware interrupt handlers, per interrupt (bcc hardirqs)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "softirqs" -d 'Time in softirq handlers, per vector (bcc softirqs)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "drsnoop" -d 'Print each direct memory reclaim with its latency and pages freed (bcc drsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "slabratetop" -d 'Kernel slab allocations by cache: allocations and bytes, busiest first (bcc slabratetop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "memleak" -d 'Outstanding allocations by stack, user (libc) or kernel (bcc memleak)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "swapin" -d 'Count pages swapped in, per process (bcc swapin)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "tcpstates" -d 'Print each TCP state change with addresses and ports (libbpf-tools tcpstates)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "tcpconnect" -d 'Print each TCP connect() with its process, addresses and port (libbpf-tools tcpconnect)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "tcpaccept" -d 'Print each TCP connection accepted, with the accepting process, addresses and ports (libbpf-tools tcpaccept)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "tcpconnlat" -d 'Print each TCP connect\'s latency, SYN sent to connection established (libbpf-tools tcpconnlat)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "tcpretrans" -d 'Print each TCP retransmission with addresses, ports and state (libbpf-tools tcpretrans)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "tcpdrop" -d 'Print each IP packet the kernel drops, with the reason and kernel stack (bcc tcpdrop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "tcprtt" -d 'TCP round-trip time histogram, from received segments (libbpf-tools tcprtt)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "tcplife" -d 'Print each TCP connection when it closes: addresses, ports, bytes, lifetime (libbpf-tools tcplife)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "solisten" -d 'Print each TCP listen() with its process, address, port and backlog (libbpf-tools solisten)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "tcpsynbl" -d 'TCP SYN backlog: accept queue length histograms per queue limit (bcc tcpsynbl)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "bindsnoop" -d 'Print each IPv4 socket bind with its port, address and result (bcc bindsnoop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "tcptop" -d 'TCP traffic by process and connection: KiB received and sent, busiest first (libbpf-tools tcptop)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "capable" -d 'Print each kernel capability check with its process and capability (bcc capable)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "klockstat" -d 'Kernel lock contention by lock: waits and wait time (perf lock contention -b, bcc klockstat)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "futexctn" -d 'Futex wait time per futex address and thread: user-space lock contention (libbpf-tools futexctn)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "bashreadline" -d 'Print the command lines interactive bash shells read (bcc bashreadline)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "gethostlatency" -d 'Print each getaddrinfo() host lookup with its latency (bcc gethostlatency)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "stat" -d 'Count events with perf counters: software, hardware, tracepoints (perf stat)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "offcpu" -d 'Time spent blocked, by stack (bcc offcputime)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "wakeuptime" -d 'Time blocked, by the kernel stack that woke the task (bcc wakeuptime)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "offwaketime" -d 'Time blocked, by the blocked stack and its waker\'s stack (bcc offwaketime)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "report" -d 'Re-render a saved JSON profile or histogram as a report, flame graph, heat map, pprof, speedscope or Chrome trace'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "diff" -d 'Compare two profiles: differential flame graph and the functions that grew and shrank most'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "exporter" -d 'Serve kernel aggregates to Prometheus and CPU profiles as pprof (ebpf_exporter)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "count" -d 'Count events, per event and group (perf stat -e, bpftrace count())'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "hist" -d 'Histogram (log2 or linear) or counts of an event\'s field, per group, in the kernel'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "trace" -d 'Print each event with its fields, as it happens (perf trace, bcc trace)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "stackcount" -d 'Count the stacks that led to an event (bcc stackcount)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "top" -d 'Live view of the hottest functions, or of any event\'s counts (perf top)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "list" -d 'List events and probes: hardware, software, tracepoints, kernel functions, USDT (perf list)'
complete -c tracekit -n "__fish_tracekit_using_subcommand help; and not __fish_seen_subcommand_from profile bitesize biolatency runqlat syscount funccount funclatency execsnoop exitsnoop threadsnoop setuids killsnoop oomkill pidpersec sigsnoop writeback opensnoop statsnoop syncsnoop mountsnoop vfsstat vfscount fsdist ext4dist xfsdist btrfsdist nfsdist cachestat fsslower ext4slower xfsslower btrfsslower nfsslower filelife dcsnoop filetop biosnoop biotop biopattern biostacks cpudist runqslower runqlen hardirqs softirqs drsnoop slabratetop memleak swapin tcpstates tcpconnect tcpaccept tcpconnlat tcpretrans tcpdrop tcprtt tcplife solisten tcpsynbl bindsnoop tcptop capable klockstat futexctn bashreadline gethostlatency stat offcpu wakeuptime offwaketime report diff exporter count hist trace stackcount top list help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
