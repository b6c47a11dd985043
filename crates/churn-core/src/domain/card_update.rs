//! The card-update page of a failing payment (`/pay/<token>`, decisions §18): how long its
//! link works, what it shows for each state of the record, and where a visit came from.

use chrono::TimeDelta;

use crate::time::Timestamp;

/// A page's link works until 60 days after its record was created: longer than any dunning
/// sequence (at most 10 retries of at most 30 days each are capped by abandonment long
/// before), short enough that an old email stops revealing the amount owed.
pub const PAGE_LIFETIME: TimeDelta = TimeDelta::days(60);

/// Whether the page of a record created at `created_at` still opens at `now`.
pub fn page_open(created_at: Timestamp, now: Timestamp) -> bool {
    now < created_at + PAGE_LIFETIME
}

/// What the page says, from the record's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageState {
    /// The button to update the card.
    Failing,
    /// Paid: nothing to do.
    Recovered,
    /// Given up: the customer should contact the business.
    Abandoned,
}

impl PageState {
    pub fn of(status: &str) -> Self {
        match status {
            "recovered" => PageState::Recovered,
            "abandoned" => PageState::Abandoned,
            _ => PageState::Failing,
        }
    }
}

/// Where a visit came from: the `via` query parameter of the link (`email` in dunning
/// emails, `banner` in the in-app banner), else `link`.
pub fn visit_source(via: Option<&str>) -> &'static str {
    match via {
        Some("email") => "email",
        Some("banner") => "banner",
        _ => "link",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_opens_for_sixty_days() {
        let created = crate::time::parse("2026-01-01T00:00:00Z").unwrap();
        assert!(page_open(created, created));
        assert!(page_open(created, created + TimeDelta::days(60) - TimeDelta::seconds(1)));
        assert!(!page_open(created, created + TimeDelta::days(60)));
    }

    #[test]
    fn states_and_sources() {
        assert_eq!(PageState::of("failing"), PageState::Failing);
        assert_eq!(PageState::of("recovered"), PageState::Recovered);
        assert_eq!(PageState::of("abandoned"), PageState::Abandoned);
        assert_eq!(visit_source(Some("email")), "email");
        assert_eq!(visit_source(Some("banner")), "banner");
        assert_eq!(visit_source(Some("<script>")), "link");
        assert_eq!(visit_source(None), "link");
    }
}
