//! One cold start: spawn a binary with a Lambda-like environment and time it until its first
//! `next` request reaches the fake Runtime API (with a deadline; a child that dies is reported
//! with its stderr).

use super::fakes::{Hit, RuntimeApi};
use super::DEADLINE;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// One binary under test.
pub struct Subject {
    pub name: &'static str,
    pub path: PathBuf,
    pub env: Vec<(String, String)>,
    pub samples: Vec<Duration>,
}

impl Subject {
    fn command(&self, runtime_api: &str) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.env_clear()
            .env("AWS_LAMBDA_RUNTIME_API", runtime_api)
            .env("AWS_LAMBDA_FUNCTION_NAME", "_")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }
}

/// Spawns `subject` and returns the time from spawn to its first `next` request.
pub fn cold_start(
    api: &RuntimeApi,
    runtime_api: &str,
    subject: &Subject,
) -> Result<Duration, String> {
    api.drain();
    let mut cmd = subject.command(runtime_api);
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", subject.path.display()))?;
    let result = wait_for_next(api, &mut child, started);
    let _ = child.kill();
    let status = child.wait();
    match result {
        Ok(d) => Ok(d),
        Err(why) => {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            Err(format!(
                "{} ({}): {why}; exit: {status:?}; stderr:\n{stderr}",
                subject.name,
                subject.path.display()
            ))
        }
    }
}

fn wait_for_next(
    api: &RuntimeApi,
    child: &mut Child,
    started: Instant,
) -> Result<Duration, String> {
    let deadline = started + DEADLINE;
    let mut others = Vec::new();
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(format!(
                "no `next` request within {DEADLINE:?}; other requests: {others:?}"
            ));
        }
        // Wake up now and then to notice a child that died before asking for an event.
        match api
            .hits
            .recv_timeout((deadline - now).min(Duration::from_millis(100)))
        {
            Ok(Hit::Next(at)) => return Ok(at.saturating_duration_since(started)),
            Ok(Hit::Other(line)) => others.push(line),
            Err(RecvTimeoutError::Timeout) => {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "exited ({status}) before asking for an event; requests: {others:?}"
                    ));
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err("the runtime API server stopped".into())
            }
        }
    }
}
