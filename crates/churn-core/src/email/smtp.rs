//! SMTP delivery through lettre. `smtp://` uses STARTTLS (opportunistically for a relay on
//! loopback), `smtps://` implicit TLS; credentials come from the URL.

use std::time::Duration;

use futures::future::BoxFuture;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::{EmailTransport, OutgoingEmail, SendError, to_message};

/// Each SMTP command waits at most this long: shorter than the SDK's 30 s, so a slow relay
/// answers the client with 502 rather than a client-side timeout (decisions §7).
pub const SMTP_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Smtp {
    transport: AsyncSmtpTransport<Tokio1Executor>,
}

impl Smtp {
    pub fn from_url(raw: &str) -> Result<Self, String> {
        let url = url::Url::parse(raw).map_err(|e| format!("CHURN_SMTP_URL: {e}"))?;
        let host = url.host_str().ok_or("CHURN_SMTP_URL: no host")?.to_owned();
        let implicit = match url.scheme() {
            "smtps" => true,
            "smtp" => false,
            other => return Err(format!("CHURN_SMTP_URL: unknown scheme {other}")),
        };
        let port = url.port().unwrap_or(if implicit { 465 } else { 587 });
        let params =
            TlsParameters::new(host.clone()).map_err(|e| format!("CHURN_SMTP_URL: {e}"))?;
        let loopback = host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        let tls = match (implicit, loopback) {
            (true, _) => Tls::Wrapper(params),
            (false, true) => Tls::Opportunistic(params),
            (false, false) => Tls::Required(params),
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
            .port(port)
            .tls(tls)
            .timeout(Some(SMTP_TIMEOUT));
        if !url.username().is_empty() {
            let user = percent_decode(url.username());
            let pass = percent_decode(url.password().unwrap_or(""));
            builder = builder.credentials(Credentials::new(user, pass));
        }
        Ok(Self {
            transport: builder.build(),
        })
    }
}

/// A permanent refusal of the mailbox itself (550 unavailable, 551 not local, 553 name not
/// allowed). Other permanent errors — authentication, sender, size — are our configuration's
/// fault and must not mark the customer's address as bouncing.
fn recipient_refused(e: &lettre::transport::smtp::Error) -> bool {
    e.is_permanent()
        && e.status()
            .is_some_and(|code| matches!(code.to_string().as_str(), "550" | "551" | "553"))
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

impl EmailTransport for Smtp {
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let message = to_message(email)?;
            match self.transport.send(message).await {
                Ok(_) => Ok(()),
                Err(e) if recipient_refused(&e) => Err(SendError::Rejected(e.to_string())),
                Err(e) => Err(SendError::Failed(e.to_string())),
            }
        })
    }
}
