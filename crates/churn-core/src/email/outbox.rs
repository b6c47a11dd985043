//! The file outbox: every email is written as an `.eml` file, for development and for
//! installations that relay mail some other way. The file is named after the message id and
//! appears whole (written aside, then renamed), so its presence proves the email went out.

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

    fn path(&self, message_id: &str) -> PathBuf {
        let file_name: String = message_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        self.dir.join(format!("{file_name}.eml"))
    }
}

impl EmailTransport for Outbox {
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let message = to_message(email)?;
            let path = self.path(&email.message_id);
            let partial = path.with_extension("eml.partial");
            let failed =
                |e: std::io::Error| SendError::Failed(format!("writing {}: {e}", path.display()));
            tokio::fs::create_dir_all(&self.dir).await.map_err(failed)?;
            tokio::fs::write(&partial, message.formatted())
                .await
                .map_err(failed)?;
            tokio::fs::rename(&partial, &path).await.map_err(failed)
        })
    }

    fn delivered(&self, message_id: &str) -> Option<bool> {
        Some(self.path(message_id).is_file())
    }
}
