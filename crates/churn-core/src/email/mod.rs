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

/// A display name or subject as a header may carry it: every control character becomes a
/// space (CR or LF would end the header, and lettre panics on them). The entries refuse
/// them, but rows stored before that, and generated subjects, may hold them.
pub fn header_text(raw: &str) -> String {
    raw.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// `Name <address>` with the name made safe for a header.
pub fn mailbox(name: &str, address: &str) -> Result<Mailbox, String> {
    let address = address
        .parse()
        .map_err(|e| format!("address {address:?}: {e}"))?;
    Ok(Mailbox::new(Some(header_text(name)), address))
}

/// The MIME message: text and HTML alternatives, Reply-To, List-Unsubscribe (and
/// List-Unsubscribe-Post).
fn to_message(email: &OutgoingEmail) -> Result<lettre::Message, SendError> {
    let bad =
        |what: &str, e: &dyn std::fmt::Display| SendError::Failed(format!("invalid {what}: {e}"));
    let from: Mailbox = email.from.parse().map_err(|e| bad("sender", &e))?;
    let to = Mailbox::new(
        email.to_name.as_deref().map(header_text),
        email.to.parse().map_err(|e| bad("recipient", &e))?,
    );
    let mut builder = lettre::Message::builder()
        .from(Mailbox::new(
            from.name.as_deref().map(header_text),
            from.email,
        ))
        .to(to)
        .subject(header_text(&email.subject))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Names and subjects as rows stored before the one-line rule may hold them: the message
    /// is built, without a panic and without an injected header.
    #[test]
    fn hostile_names_and_subjects_are_encoded_not_fatal() {
        for c in ['\r', '\n', '\0', '\t', '\u{7f}', '\u{85}'] {
            let hostile = format!("Dana{c}Bcc: evil@example.com{c}");
            let email = OutgoingEmail {
                from: mailbox(&hostile, "no-reply@example.com")
                    .unwrap()
                    .to_string(),
                to: "dana@example.com".into(),
                to_name: Some(hostile.clone()),
                reply_to: None,
                subject: hostile.clone(),
                html: "<p>hi</p>".into(),
                text: "hi".into(),
                list_unsubscribe: "<mailto:u@example.com>".into(),
                message_id: "m@churn".into(),
            };
            let message = to_message(&email).expect("a message");
            let formatted = String::from_utf8_lossy(&message.formatted()).into_owned();
            assert!(
                !formatted.lines().any(|l| l.starts_with("Bcc:")),
                "{c:?}: {formatted}"
            );
            assert!(formatted.contains("Dana"), "{formatted}");
        }
    }
}
