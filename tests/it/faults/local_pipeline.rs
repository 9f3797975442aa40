//! `make dev`'s event sources (`scripts/local_pipeline.py`) survive an emulator restart: the
//! script plays the template's stream and retry queue (ParallelizationFactor lanes, several queue
//! pollers) into a Lambda Invoke API served here by the real process function's handler; the
//! emulator is killed and restarted between two waves of webhooks; every webhook is processed,
//! each effect once.

use crate::faults::missing_or_wrong;
use inbox_core::clock::SystemClock;
use integration_tests::faults::report::record;
use integration_tests::faults::OwnEmulator;
use integration_tests::pipeline::{CounterHandler, Pipeline, TestProcessor, TYPE};
use integration_tests::{python, root};
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

const WAVE: usize = 15;

/// Answers one Invoke API request: `process` through the real handler, anything else `{}`.
async fn invoke(mut conn: TcpStream, processor: &TestProcessor<SystemClock>, calls: &AtomicUsize) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head_end, length) = loop {
        let n = conn.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while buf.len() < head_end + length {
        let n = conn.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let path = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let payload: Value =
        serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or_default();
    let answer = if path.contains("/functions/process/") {
        calls.fetch_add(1, Ordering::SeqCst);
        let event = lambda_runtime::LambdaEvent::new(payload, lambda_runtime::Context::default());
        match process_function::handle(processor, event).await {
            Ok(v) => v,
            Err(e) => json!({"errorType": "Error", "errorMessage": e.to_string()}),
        }
    } else {
        json!({})
    };
    let body = answer.to_string();
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(response.as_bytes()).await;
}

/// Stops the pipeline script when the test ends, however it ends.
struct Script(Child);
impl Drop for Script {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn all_processed(p: &Pipeline, ids: &[String], deadline: Instant) {
    while missing_or_wrong(p, ids).await != (0, 0) {
        assert!(
            Instant::now() < deadline,
            "not all processed: {:?}",
            missing_or_wrong(p, ids).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_pipeline_survives_an_emulator_restart() {
    let mut emulator = OwnEmulator::start();
    let p = Pipeline::on(&emulator.endpoints()).await;
    let handler = CounterHandler::new(&p.harness.table, false);
    let processor = p
        .processor(Pipeline::registry(handler.clone()), SystemClock)
        .await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let lambda_url = format!("http://{}", listener.local_addr().unwrap());
    let calls = AtomicUsize::new(0);
    let serve = async {
        loop {
            let Ok((conn, _)) = listener.accept().await else {
                return;
            };
            invoke(conn, &processor, &calls).await;
        }
    };
    let test = async {
        let _script = Script(
            Command::new(python())
                .arg(root().join("scripts/local_pipeline.py"))
                .args(["--lambda-url", &lambda_url])
                // The emulators through the SDK's endpoint variables, as `make dev` gives them.
                .envs(emulator.endpoints().env())
                .arg("--table")
                .arg(format!("InboxTable={}", p.harness.table))
                .arg("--queue")
                .arg(format!("RetryQueue={}", p.retry_url))
                .arg("--queue")
                .arg(format!("QuarantineQueue={}", p.quarantine_url))
                // Only the process function is served here (not deliver, reaper, reconcile).
                .args(["--function", "process"])
                .env("AWS_ACCESS_KEY_ID", "testing")
                .env("AWS_SECRET_ACCESS_KEY", "testing")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start scripts/local_pipeline.py"),
        );
        let deadline = Instant::now() + Duration::from_secs(90);
        let first: Vec<String> = (0..WAVE).map(|i| format!("evt_before_{i}")).collect();
        for id in &first {
            assert_eq!(p.ingest(id, TYPE, json!({})).await.code(), "accepted");
        }
        all_processed(&p, &first, deadline).await;
        tokio::task::block_in_place(|| emulator.restart());
        let second: Vec<String> = (0..WAVE).map(|i| format!("evt_after_{i}")).collect();
        for id in &second {
            assert_eq!(p.ingest(id, TYPE, json!({})).await.code(), "accepted");
        }
        let all: Vec<String> = first.iter().chain(&second).cloned().collect();
        all_processed(&p, &all, deadline).await;
        all
    };
    let all = tokio::select! {
        all = test => all,
        () = serve => panic!("the Invoke API stopped"),
    };
    let (missing, wrong) = missing_or_wrong(&p, &all).await;
    record(
        "7-local-pipeline",
        "emulator killed and restarted under `make dev`'s event sources",
        format!(
            "scripts/local_pipeline.py playing template.yaml's sources into the real process \
             handler; {WAVE} webhooks, the emulator killed and restarted, {WAVE} more"
        ),
        format!(
            "processed {}/{} (missing {missing}, effects not exactly once {wrong}) in {} process \
             invocations",
            all.len() - missing - wrong,
            all.len(),
            calls.load(Ordering::SeqCst)
        ),
    );
    assert_eq!((missing, wrong), (0, 0));
}
