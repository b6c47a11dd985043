//! Sending email: one `EmailTransport` trait with an SMTP implementation and a file outbox.

pub mod compose;
mod outbox;
mod smtp;

use futures::future::BoxFuture;
use lettre::message::{Mailbox, MultiPart, header};

pub use outbox::Outbox;
pub use smtp::Smtp;

/// A fully composed email.
#[derive(Debug, Clone)]
pub struct OutgoingEmail {
    pub from: String,
    pub to: String,
    pub to_name: Option<String>,
    pub reply_to: Option<String>,
    pub subject: String,
    pub html: String,
    pub text: String,
    pub list_unsubscribe: String,
    /// Without angle brackets: `id@host`.
    pub message_id: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The receiving server refused the recipient for good (unknown mailbox, …).
    #[error("recipient rejected: {0}")]
    Rejected(String),
    /// Anything that may work later: connection, timeouts, temporary refusals.
    #[error("email delivery failed: {0}")]
    Failed(String),
}

pub trait EmailTransport: Send + Sync {
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<(), SendError>>;

    /// Whether the email with this message id was handed over, where the transport keeps
    /// the evidence (the file outbox); `None` where it cannot tell (an SMTP relay).
    fn delivered(&self, _message_id: &str) -> Option<bool> {
        None
    }
}

/// The MIME message: text and HTML alternatives, Reply-To, List-Unsubscribe (and
/// List-Unsubscribe-Post).
fn to_message(email: &OutgoingEmail) -> Result<lettre::Message, SendError> {
    let bad =
        |what: &str, e: &dyn std::fmt::Display| SendError::Failed(format!("invalid {what}: {e}"));
    let from: Mailbox = email.from.parse().map_err(|e| bad("sender", &e))?;
    let to = Mailbox::new(
        email.to_name.clone(),
        email.to.parse().map_err(|e| bad("recipient", &e))?,
    );
    let mut builder = lettre::Message::builder()
        .from(from)
        .to(to)
        .subject(&email.subject)
        .message_id(Some(format!("<{}>", email.message_id)))
        .header(ListUnsubscribe(email.list_unsubscribe.clone()));
    // RFC 8058 one-click unsubscribe, offered whenever the header carries a web URL.
    if email.list_unsubscribe.contains("<http") {
        builder = builder.header(ListUnsubscribePost);
    }
    if let Some(reply_to) = &email.reply_to {
        builder = builder.reply_to(reply_to.parse().map_err(|e| bad("reply-to", &e))?);
    }
    builder
        .multipart(MultiPart::alternative_plain_html(
            email.text.clone(),
            email.html.clone(),
        ))
        .map_err(|e| bad("message", &e))
}

#[derive(Clone)]
struct ListUnsubscribe(String);

impl header::Header for ListUnsubscribe {
    fn name() -> header::HeaderName {
        header::HeaderName::new_from_ascii_str("List-Unsubscribe")
    }

    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self(s.to_owned()))
    }

    fn display(&self) -> header::HeaderValue {
        header::HeaderValue::new(Self::name(), self.0.clone())
    }
}

#[derive(Clone)]
struct ListUnsubscribePost;

impl header::Header for ListUnsubscribePost {
    fn name() -> header::HeaderName {
        header::HeaderName::new_from_ascii_str("List-Unsubscribe-Post")
    }

    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self)
    }

    fn display(&self) -> header::HeaderValue {
        header::HeaderValue::new(Self::name(), "List-Unsubscribe=One-Click".to_owned())
    }
}
