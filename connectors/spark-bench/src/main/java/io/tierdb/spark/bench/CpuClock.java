/*
 * CpuClock: CPU seconds spent so far by this JVM and by a local Postgres
 * cluster, for SeamScanBench. On a machine shared with other jobs the wall
 * clock of a scan stretches with the load while the CPU it burns does not, and
 * the two sides put their work in different places (plain JDBC makes the
 * backends produce every row, TierDBSpark reads most rows inside the JVM), so
 * only the sum of both processes compares them. Linux only (/proc).
 */
package io.tierdb.spark.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

final class CpuClock {
    private final long postmaster;
    private final double ticksPerSecond;
    private final com.sun.management.OperatingSystemMXBean os;

    /** postmaster: the cluster's postmaster PID; ticksPerSecond: the kernel's USER_HZ (sysconf CLK_TCK). */
    CpuClock(long postmaster, long ticksPerSecond) {
        this.postmaster = postmaster;
        this.ticksPerSecond = ticksPerSecond;
        this.os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    }

    /** Every thread of this JVM: Spark's tasks, the driver, the JIT and the GC. */
    double jvm() {
        return os.getProcessCpuTime() / 1e9;
    }

    /**
     * The postmaster, its live children (the backends serving the connections of
     * a run) and the children it has reaped: a JDBC partition's backend exits
     * when Spark closes its connection, and its CPU then moves into the
     * postmaster's cutime and cstime, so the sum stays whole either way.
     */
    double postgres() {
        long ticks = ticks(postmaster, true);
        for (ProcessHandle child : ProcessHandle.of(postmaster).orElseThrow(this::gone).children().toList()) {
            ticks += ticks(child.pid(), false);
        }
        return ticks / ticksPerSecond;
    }

    private IllegalStateException gone() {
        return new IllegalStateException("the Postgres postmaster (pid " + postmaster + ") is not running");
    }

    /** utime + stime of pid, plus cutime + cstime when reaped children count; 0 if it exited meanwhile. */
    private static long ticks(long pid, boolean withReaped) {
        String stat;
        try {
            stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        } catch (IOException e) {
            return 0;  // a backend that exited between listing and reading: its ticks are in cutime now
        }
        // The command name may hold spaces and parentheses: the fields start after the last ')'.
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        // f[0] is field 3 (state): utime, stime, cutime, cstime are fields 14 to 17.
        long t = Long.parseLong(f[11]) + Long.parseLong(f[12]);
        return withReaped ? t + Long.parseLong(f[13]) + Long.parseLong(f[14]) : t;
    }
}
