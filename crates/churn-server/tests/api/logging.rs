//! The released binary's JSON logs: every request line carries its request id.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use churn_core::both_backends;
use churn_core::testing::{Backend, TestDatabase};

both_backends!(json_logs_carry_the_request_id);

async fn json_logs_carry_the_request_id(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let mut server = Command::new(env!("CARGO_BIN_EXE_churn-server"))
        .env("CHURN_BIND", "127.0.0.1:0")
        .env("CHURN_DATABASE_URL", &db.url)
        .env("CHURN_DATA_DIR", db.data_dir.path())
        .env("CHURN_LOG_FORMAT", "json")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    let stderr = server.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let next_json = |deadline: std::time::Instant| -> serde_json::Value {
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = lines_rx
                .recv_timeout(left)
                .expect("a log line before the deadline");
            if let Ok(value) = serde_json::from_str(&line) {
                return value;
            }
        }
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let address = loop {
        let line = next_json(deadline);
        if let Some(address) = line["address"].as_str() {
            break address.to_owned();
        }
    };
    let answer = reqwest::Client::new()
        .get(format!("http://{address}/api/v1/auth/me"))
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 401);
    let logged = loop {
        let line = next_json(deadline);
        if line["span"]["request_id"] == "trace-me-42" || line["request_id"] == "trace-me-42" {
            break line;
        }
    };
    assert_eq!(logged["level"], "INFO");
    server.kill().unwrap();
    let _ = server.wait();
}
