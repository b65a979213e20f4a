//! The processes of a load run: starting them (pinned to a core with `taskset` when there are
//! two), reading their stdout line by line on a thread of its own, and sampling a process's CPU
//! time, run-queue wait and resident memory from `/proc`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// How long a server may take to say where it listens.
const LISTEN_DEADLINE: Duration = Duration::from_secs(30);

/// The core a process runs on, when the machine has two or more and `taskset` is there.
#[derive(Debug, Clone, Copy)]
pub struct Pinning {
    pub enabled: bool,
}

impl Pinning {
    /// Pins when at least two cores are available and `taskset` runs.
    pub fn detect() -> Pinning {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let taskset = Command::new("taskset").arg("--version").output().is_ok_and(|o| o.status.success());
        Pinning { enabled: cores >= 2 && taskset }
    }

    /// `program args`, on core `core` when pinning.
    pub fn command(&self, core: usize, program: &Path, args: &[&str]) -> Command {
        if self.enabled {
            let mut command = Command::new("taskset");
            command.arg("-c").arg(core.to_string()).arg(program).args(args);
            command
        } else {
            let mut command = Command::new(program);
            command.args(args);
            command
        }
    }
}

/// A running process whose stdout lines arrive on a channel; killed when dropped.
pub struct Running {
    pub name: String,
    child: Child,
    pub lines: Receiver<String>,
}

impl Running {
    /// Starts `command`, its stdout read line by line (stderr goes to ours).
    pub fn start(name: &str, mut command: Command) -> Result<Running, String> {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        let stdout = child.stdout.take().expect("piped");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Running { name: name.to_owned(), child, lines })
    }

    /// The address of the first line, `listening on ADDR`.
    pub fn address(&self) -> Result<String, String> {
        let line = self.lines.recv_timeout(LISTEN_DEADLINE).map_err(|_| format!("{} never listened", self.name))?;
        line.strip_prefix("listening on ").map(str::to_owned).ok_or_else(|| format!("{}: {line}", self.name))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for it to exit; `false` when it failed.
    pub fn wait(mut self) -> bool {
        self.child.wait().is_ok_and(|status| status.success())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU time (user + system), run-queue wait and resident memory of a process at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub cpu_seconds: f64,
    /// Time its threads spent runnable but waiting for a core, summed over the threads alive
    /// now (`/proc/<pid>/task/*/schedstat`, second field); `NaN` where the kernel keeps none.
    pub wait_seconds: f64,
    pub rss_bytes: u64,
}

/// Clock ticks per second of `/proc/<pid>/stat`.
pub fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// Samples process `pid` (an exited one that is not reaped yet has no resident memory); `None`
/// once it is gone.
pub fn sample(pid: u32, ticks_per_second: f64) -> Option<Sample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib: u64 = match status.lines().find_map(|l| l.strip_prefix("VmRSS:")) {
        Some(rss) => rss.trim().trim_end_matches("kB").trim().parse().ok()?,
        // A process that exited and is not reaped yet holds no memory; its CPU time stays.
        None if fields.first() == Some(&"Z") => 0,
        None => return None,
    };
    Some(Sample {
        cpu_seconds: (utime + stime) / ticks_per_second,
        wait_seconds: wait_seconds(pid),
        rss_bytes: rss_kib * 1024,
    })
}

/// The run-queue wait of process `pid`'s threads, in seconds.
fn wait_seconds(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return f64::NAN };
    let mut nanoseconds = 0u64;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else { continue };
        match text.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()) {
            Some(n) => nanoseconds += n,
            None => return f64::NAN,
        }
    }
    nanoseconds as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generator that exits right after its last mark is a zombie when the harness samples
    /// it: `/proc/<pid>/status` then has no `VmRSS`, but its CPU time is still there.
    #[test]
    fn a_process_that_exited_unreaped_still_samples() {
        let mut child =
            Command::new("sh").args(["-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"]).spawn().unwrap();
        let pid = child.id();
        while !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap()
            .rsplit_once(')')
            .unwrap()
            .1
            .trim_start()
            .starts_with('Z')
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let sample = sample(pid, clock_ticks());
        child.wait().unwrap();
        let sample = sample.expect("a zombie's CPU time");
        assert_eq!(sample.rss_bytes, 0);
        assert!(sample.cpu_seconds > 0.0, "the loop ran on the CPU: {sample:?}");
    }
}
