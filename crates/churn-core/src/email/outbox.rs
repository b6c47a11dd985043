//! The file outbox: every email is written as an `.eml` file, for development and for
//! installations that relay mail some other way.

use std::path::PathBuf;

use futures::future::BoxFuture;

use super::{EmailTransport, OutgoingEmail, SendError, to_message};

pub struct Outbox {
    dir: PathBuf,
}

impl Outbox {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }
}

impl EmailTransport for Outbox {
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let message = to_message(email)?;
            let file_name: String = email
                .message_id
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            let path = self.dir.join(format!("{file_name}.eml"));
            let failed =
                |e: std::io::Error| SendError::Failed(format!("writing {}: {e}", path.display()));
            tokio::fs::create_dir_all(&self.dir).await.map_err(failed)?;
            tokio::fs::write(&path, message.formatted())
                .await
                .map_err(failed)
        })
    }
}
