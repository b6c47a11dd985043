//! Card-expiry notices (decisions §18): when the email about a card that expires soon goes
//! out, and what it says.

use chrono::TimeDelta;

use crate::time::Timestamp;

/// `dunning-config.expiry_notice_days` when never set.
pub const DEFAULT_DAYS: i64 = 14;
/// The most days ahead a notice may be sent: a card Stripe reports at the start of its last
/// month is never more than a month or two away from its expiry.
pub const MAX_DAYS: i64 = 60;

/// When the notice of a card expiring at `expires_at` goes out: `days` before, or at once
/// when that is already past. `None` when notices are off (`days` 0) or the card has
/// already expired (then there is nothing to warn of: a failing payment's dunning takes over).
pub fn send_at(expires_at: Timestamp, days: i64, now: Timestamp) -> Option<Timestamp> {
    if days <= 0 || expires_at <= now {
        return None;
    }
    Some((expires_at - TimeDelta::days(days)).max(now))
}

/// "Visa ending in 4242", "card ending in 4242", or `None` when the last digits are unknown.
/// Tracked events carry these as free properties: only four digits count as last digits,
/// and only a short name of letters, digits and spaces as a brand.
pub fn card_label(brand: Option<&str>, last4: Option<&str>) -> Option<String> {
    let last4 = last4.filter(|l| l.len() == 4 && l.bytes().all(|b| b.is_ascii_digit()))?;
    let brand = brand
        .map(str::trim)
        .filter(|b| {
            !b.is_empty()
                && b.len() <= 30
                && b.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ')
        })
        .unwrap_or("card");
    Some(format!("{brand} ending in {last4}"))
}

/// The day a card expires, as the email and the page say it.
pub fn expiry_day(expires_at: Timestamp) -> String {
    expires_at.format("%-d %B %Y").to_string()
}

/// What the notice says.
pub struct ExpiryFacts<'a> {
    pub project_name: &'a str,
    /// [`card_label`] of the card, when known.
    pub card: Option<&'a str>,
    pub expires_at: Timestamp,
    /// The customer's card-update page.
    pub update_url: &'a str,
    pub sender_name: &'a str,
}

/// The subject and text of the notice: which card, when it expires, where to replace it.
pub fn render(f: &ExpiryFacts<'_>) -> (String, String) {
    let day = expiry_day(f.expires_at);
    let card = match f.card {
        Some(label) => format!("The {label}"),
        None => "The card".to_owned(),
    };
    let subject = match f.card {
        Some(label) => format!("Your {label} expires on {day}"),
        None => format!("Your card for {} expires on {day}", f.project_name),
    };
    let body = format!(
        "Hello,\n\n{card} you pay {project} with expires on {day}. To keep your payments \
         going through after that, you can add a new card here: {url}\n\nIf you have already \
         updated your card, there is nothing more to do.\n\n{sender}",
        project = f.project_name,
        url = f.update_url,
        sender = f.sender_name,
    );
    (subject, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse;

    #[test]
    fn the_notice_goes_out_days_before_or_at_once() {
        let now = parse("2030-07-01T09:00:00Z").unwrap();
        let expires = parse("2030-08-31T23:59:59.999Z").unwrap();
        assert_eq!(send_at(expires, 14, now), parse("2030-08-17T23:59:59.999Z"));
        // Nearer than the notice period: at once.
        let near = parse("2030-08-20T09:00:00Z").unwrap();
        assert_eq!(send_at(expires, 14, near), Some(near));
        assert_eq!(send_at(expires, 0, now), None, "off");
        assert_eq!(send_at(now, 14, now), None, "already expired");
    }

    #[test]
    fn cards_are_named_by_their_last_digits() {
        assert_eq!(
            card_label(Some("Visa"), Some("4242")).as_deref(),
            Some("Visa ending in 4242")
        );
        assert_eq!(
            card_label(None, Some("4242")).as_deref(),
            Some("card ending in 4242")
        );
        assert_eq!(card_label(Some("Visa"), None), None);
        assert_eq!(card_label(Some("Visa"), Some("42a2")), None);
        assert_eq!(
            card_label(Some("<b>Visa</b>"), Some("4242")).as_deref(),
            Some("card ending in 4242")
        );
    }

    #[test]
    fn the_notice_email() {
        let expires_at = parse("2030-08-31T23:59:59.999Z").unwrap();
        let mut rendered = Vec::new();
        for card in [Some("Visa ending in 4242"), None] {
            let (subject, body) = render(&ExpiryFacts {
                project_name: "Acme",
                card,
                expires_at,
                update_url: "https://churn.example/pay/customer/en-1.sig?via=email",
                sender_name: "Billing Team",
            });
            rendered.push(format!("Subject: {subject}\n\n{body}\n"));
        }
        insta::assert_snapshot!(rendered.join("\n---\n\n"));
    }
}
