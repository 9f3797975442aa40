//! The stand-ins the measured process talks to: a fake Lambda Runtime API that reports when the
//! first `GET …/invocation/next` arrives, and a TCP sink in place of the AWS endpoint that counts
//! the connections it gets.

use super::NEXT_PATH;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::Instant;

/// What the fake Runtime API saw.
#[derive(Debug)]
pub enum Hit {
    /// The first line of a `GET …/invocation/next`, and when it arrived.
    Next(Instant),
    /// Any other request (e.g. `POST …/init/error`): its request line.
    Other(String),
}

/// The fake Lambda Runtime API: accepts connections, reports requests on a channel.
pub struct RuntimeApi {
    pub addr: SocketAddr,
    pub hits: Receiver<Hit>,
}

impl RuntimeApi {
    pub fn start() -> Result<Self, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("local_addr: {e}"))?;
        let (tx, hits) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let tx = tx.clone();
                std::thread::spawn(move || serve(stream, &tx));
            }
        });
        Ok(Self { addr, hits })
    }

    /// Drops anything left over from an earlier run.
    pub fn drain(&self) {
        while self.hits.try_recv().is_ok() {}
    }
}

/// Serves one connection: reports each request; answers anything but `next` with 202 (so a
/// failing init can post its error and exit), and holds a `next` open until the peer goes away.
fn serve(stream: TcpStream, tx: &Sender<Hit>) {
    let _ = stream.set_nodelay(true);
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let arrived = Instant::now();
        let request_line = line.trim_end().to_owned();
        let mut content_length = 0usize;
        loop {
            let mut header = String::new();
            match reader.read_line(&mut header) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    content_length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut parts = request_line.split_whitespace();
        let is_next = parts.next() == Some("GET")
            && parts
                .next()
                .is_some_and(|target| target.ends_with(NEXT_PATH));
        if is_next {
            let _ = tx.send(Hit::Next(arrived));
            // Hold the long poll open until the child is killed.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
            return;
        }
        let _ = tx.send(Hit::Other(request_line));
        let mut body = vec![0u8; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let reply = "HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// A TCP sink standing in for the AWS endpoint: counts the connections it gets.
pub struct EndpointSink {
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

impl EndpointSink {
    pub fn start() -> Result<Self, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("local_addr: {e}"))?;
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Ok(Self { addr, connections })
    }

    pub fn count(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}
