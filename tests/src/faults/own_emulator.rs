//! An emulator process of the test's own: its own port and state file, so a fault test can pause
//! (SIGSTOP/SIGCONT), kill (SIGKILL) and restart it without disturbing the shared one. It runs
//! `scripts/moto_server.py` like `make test` does (serialized DynamoDB; plain moto when the
//! environment says `MOTO_SERIALIZE=0`), durable across restarts through `--state-file`.

use crate::{python, root};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `scripts/moto_server.py` owned by a test; stopped (and its files removed) on drop.
pub struct OwnEmulator {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
    /// How many times it was started (1 + restarts).
    pub starts: usize,
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

impl OwnEmulator {
    /// Starts one on a free port with a fresh state file, and waits until it answers.
    pub fn start() -> Self {
        let dir =
            std::env::temp_dir().join(format!("inbox-emulator-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("create the emulator's directory");
        let mut emulator = Self {
            port: free_port(),
            dir,
            child: None,
            starts: 0,
        };
        emulator.spawn();
        emulator
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Whether this emulator runs DynamoDB requests one at a time (`MOTO_SERIALIZE` is not `0`).
    pub fn serialized() -> bool {
        std::env::var("MOTO_SERIALIZE").map_or(true, |v| v != "0")
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("moto.log"))
            .expect("open the emulator's log");
        let child = Command::new(python())
            .arg(root().join("scripts/moto_server.py"))
            .args(["-H", "127.0.0.1", "-p", &self.port.to_string()])
            .arg("--state-file")
            .arg(self.dir.join("state.jsonl"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .expect("start scripts/moto_server.py with the venv's python (INBOX_VENV)");
        self.child = Some(child);
        self.starts += 1;
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("the emulator exited ({status}); log: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "the emulator did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let status = Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Freezes the process (SIGSTOP): connections are accepted by the kernel, nothing answers.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets it go on (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// Kills it (SIGKILL: no chance to clean up), and waits until it is gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port with the same state file (it replays its log).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The emulator's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("moto.log")).unwrap_or_default()
    }
}

impl Drop for OwnEmulator {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_ref() {
            // A paused process ignores SIGKILL until continued on some systems: continue it first.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
