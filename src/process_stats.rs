//! What the running process costs, read from Linux's `/proc/self` for the `process_*` metrics
//! both servers export (the names and meanings of Prometheus's client libraries, so the usual
//! dashboards and alerts apply), and the free space of the file system under a directory.
//!
//! Nothing here allocates per call beyond reading the small `/proc` files; a scrape reads them
//! once. On other systems, or where `/proc` is hidden, [`ProcessStats::read`] gives `None` and
//! the metrics are left out rather than reported as zeros.

use std::fmt::Write;
use std::path::Path;

/// One reading of the process's resource use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessStats {
    /// User plus system CPU time spent, all threads.
    pub cpu_seconds: f64,
    /// Resident memory.
    pub resident_bytes: u64,
    /// Virtual memory.
    pub virtual_bytes: u64,
    /// When the process started, in seconds since the Unix epoch.
    pub start_time_seconds: f64,
    /// Threads of the process.
    pub threads: u64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// The soft limit on open file descriptors.
    pub max_fds: u64,
}

impl ProcessStats {
    /// Reads `/proc/self/stat`, `/proc/self/fd` and `/proc/stat` (`None` where they cannot be read).
    #[cfg(target_os = "linux")]
    pub fn read() -> Option<ProcessStats> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // The command name (field 2) may hold spaces and parentheses: fields are counted from
        // the last ')'. After it come field 3 (state) onwards.
        let rest = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |number: usize| -> Option<u64> { fields.get(number - 3)?.parse().ok() };
        // SAFETY: sysconf and getrlimit only read process-wide values into locals.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if ticks <= 0 || page <= 0 {
            return None;
        }
        let ticks = ticks as f64;
        let boot_time: u64 = std::fs::read_to_string("/proc/stat")
            .ok()?
            .lines()
            .find_map(|line| line.strip_prefix("btime ")?.trim().parse().ok())?;
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let max_fds = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
            0 => limit.rlim_cur,
            _ => 0,
        };
        Some(ProcessStats {
            cpu_seconds: (field(14)? + field(15)?) as f64 / ticks,
            threads: field(20)?,
            start_time_seconds: boot_time as f64 + field(22)? as f64 / ticks,
            virtual_bytes: field(23)?,
            resident_bytes: field(24)? * page as u64,
            open_fds: std::fs::read_dir("/proc/self/fd").ok()?.count() as u64,
            max_fds,
        })
    }

    /// Not Linux: no reading.
    #[cfg(not(target_os = "linux"))]
    pub fn read() -> Option<ProcessStats> {
        None
    }

    /// This moment's reading as OpenMetrics text, or nothing where it cannot be read.
    pub fn openmetrics_now() -> String {
        ProcessStats::read()
            .map(|stats| stats.openmetrics())
            .unwrap_or_default()
    }

    /// The reading as OpenMetrics text (no `# EOF`: it goes inside a larger exposition).
    pub fn openmetrics(&self) -> String {
        let mut text = String::new();
        let mut family = |name: &str, kind: &str, help: &str, sample: &str, value: f64| {
            // Writing to a String cannot fail.
            let _ = write!(
                text,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{sample} {value}\n"
            );
        };
        family(
            "process_cpu_seconds",
            "counter",
            "Total user and system CPU time spent in seconds.",
            "process_cpu_seconds_total",
            self.cpu_seconds,
        );
        for (name, help, value) in [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                self.resident_bytes as f64,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                self.virtual_bytes as f64,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                self.start_time_seconds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                self.threads as f64,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                self.open_fds as f64,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                self.max_fds as f64,
            ),
        ] {
            family(name, "gauge", help, name, value);
        }
        text
    }
}

/// Free and total bytes of the file system holding `dir` (`None` where it cannot be read).
/// Free counts what an unprivileged process may still write (the blocks available to it).
#[cfg(target_os = "linux")]
pub fn disk_space(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct from a NUL-terminated path it only reads.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stats) } != 0 {
        return None;
    }
    let block = stats.f_frsize as u64;
    Some((stats.f_bavail as u64 * block, stats.f_blocks as u64 * block))
}

/// Not Linux: no reading.
#[cfg(not(target_os = "linux"))]
pub fn disk_space(_dir: &Path) -> Option<(u64, u64)> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_reading_of_this_process_is_plausible_and_written_as_openmetrics() {
        let stats = ProcessStats::read().expect("/proc/self is readable on Linux");
        assert!(stats.resident_bytes > 0 && stats.virtual_bytes >= stats.resident_bytes);
        assert!(stats.threads >= 1 && stats.open_fds >= 1 && stats.max_fds >= stats.open_fds);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(stats.start_time_seconds <= now + 1.0 && stats.start_time_seconds > now - 86_400.0);
        let text = stats.openmetrics();
        assert!(
            text.contains("# TYPE process_cpu_seconds counter\n"),
            "{text}"
        );
        assert!(text.contains("\nprocess_cpu_seconds_total "), "{text}");
        assert!(text.contains("\nprocess_resident_memory_bytes "), "{text}");
        assert!(!text.contains("# EOF"), "{text}");
    }

    #[test]
    fn the_disk_under_a_directory_has_room_and_a_size() {
        let (free, total) = disk_space(Path::new(".")).expect("statvfs of the working directory");
        assert!(total > 0 && free <= total);
        assert_eq!(disk_space(Path::new("/no/such/directory")), None);
    }
}
