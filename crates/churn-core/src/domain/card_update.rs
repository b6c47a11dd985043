//! The card-update page of a failing payment (`/pay/<token>`, decisions §18), and of a
//! customer whose card expires soon (`/pay/customer/<token>`): how long its link works, what
//! it shows for each state, and where a visit came from.

use chrono::TimeDelta;

use super::provider::Provider;
use crate::time::Timestamp;

/// A page's link works until 60 days after its record was created: longer than any dunning
/// sequence (at most 10 retries of at most 30 days each are capped by abandonment long
/// before), short enough that an old email stops revealing the amount owed.
pub const PAGE_LIFETIME: TimeDelta = TimeDelta::days(60);

/// Whether the page of a record created at `created_at` still opens at `now`.
pub fn page_open(created_at: Timestamp, now: Timestamp) -> bool {
    now < created_at + PAGE_LIFETIME
}

/// What the page says: from the record's status, or `Expiring` on a customer's page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageState {
    /// The button to update the card.
    Failing,
    /// A customer's card expires soon (an expiry notice's page): the button to replace it.
    Expiring,
    /// Paid: nothing to do.
    Recovered,
    /// Given up: the customer should contact the business.
    Abandoned,
}

impl PageState {
    /// Whether the page offers its button.
    pub fn actionable(self) -> bool {
        matches!(self, PageState::Failing | PageState::Expiring)
    }

    pub fn of(status: &str) -> Self {
        match status {
            "recovered" => PageState::Recovered,
            "abandoned" => PageState::Abandoned,
            _ => PageState::Failing,
        }
    }
}

/// What the page's button does for a failing record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageAction {
    /// A form posting to the page: churn opens a Stripe Checkout Session in setup mode.
    StripeCheckout,
    /// A link: Razorpay's payment link (`short_url`), the project's `update_payment_url` for
    /// custom billing, or the provider's hosted invoice when Stripe has no customer id.
    Link(String),
}

/// The button of a failing record's page: Stripe with a customer → Checkout; custom → the
/// project's `update_payment_url`; otherwise the payment link the provider sent. `None`:
/// nothing to press, the page asks the customer to contact the business.
pub fn page_action(
    provider: Provider,
    stripe_customer: bool,
    payment_link: Option<&str>,
    update_payment_url: Option<&str>,
) -> Option<PageAction> {
    let https = |u: &&str| url::Url::parse(u).is_ok_and(|u| u.scheme() == "https");
    let link = |u: Option<&str>| u.filter(https).map(|u| PageAction::Link(u.to_owned()));
    match provider {
        Provider::Stripe if stripe_customer => Some(PageAction::StripeCheckout),
        Provider::Custom => link(update_payment_url).or_else(|| link(payment_link)),
        _ => link(payment_link),
    }
}

/// The button of a customer's page (an expiry notice's): Stripe Checkout when churn knows
/// the customer at a connected Stripe, else the project's `update_payment_url`. A Razorpay
/// payment link belongs to one payment, so there is none for a customer.
pub fn customer_page_action(
    stripe_customer: bool,
    update_payment_url: Option<&str>,
) -> Option<PageAction> {
    if stripe_customer {
        return Some(PageAction::StripeCheckout);
    }
    page_action(Provider::Custom, false, None, update_payment_url)
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
        assert!(page_open(
            created,
            created + TimeDelta::days(60) - TimeDelta::seconds(1)
        ));
        assert!(!page_open(created, created + TimeDelta::days(60)));
    }

    #[test]
    fn the_button_follows_the_provider() {
        let link = |u: &str| Some(PageAction::Link(u.to_owned()));
        let rzp = Some("https://rzp.io/i/abc");
        assert_eq!(
            page_action(
                Provider::Stripe,
                true,
                Some("https://invoice.stripe.com/i/1"),
                None
            ),
            Some(PageAction::StripeCheckout)
        );
        assert_eq!(
            page_action(
                Provider::Stripe,
                false,
                Some("https://invoice.stripe.com/i/1"),
                None
            ),
            link("https://invoice.stripe.com/i/1")
        );
        assert_eq!(
            page_action(Provider::Razorpay, false, rzp, None),
            link("https://rzp.io/i/abc")
        );
        assert_eq!(
            page_action(
                Provider::Custom,
                false,
                None,
                Some("https://acme.io/billing")
            ),
            link("https://acme.io/billing")
        );
        // Only https targets: a link that is not is left out, as in the emails.
        assert_eq!(
            page_action(Provider::Razorpay, false, Some("http://rzp.io/i/abc"), None),
            None
        );
        assert_eq!(page_action(Provider::Custom, false, None, None), None);
    }

    #[test]
    fn a_customer_page_offers_checkout_or_the_update_url() {
        assert_eq!(
            customer_page_action(true, Some("https://acme.io/billing")),
            Some(PageAction::StripeCheckout)
        );
        assert_eq!(
            customer_page_action(false, Some("https://acme.io/billing")),
            Some(PageAction::Link("https://acme.io/billing".into()))
        );
        assert_eq!(customer_page_action(false, Some("http://acme.io/b")), None);
        assert_eq!(customer_page_action(false, None), None);
    }

    #[test]
    fn states_and_sources() {
        assert!(PageState::Failing.actionable() && PageState::Expiring.actionable());
        assert!(!PageState::Recovered.actionable() && !PageState::Abandoned.actionable());
        assert_eq!(PageState::of("failing"), PageState::Failing);
        assert_eq!(PageState::of("recovered"), PageState::Recovered);
        assert_eq!(PageState::of("abandoned"), PageState::Abandoned);
        assert_eq!(visit_source(Some("email")), "email");
        assert_eq!(visit_source(Some("banner")), "banner");
        assert_eq!(visit_source(Some("<script>")), "link");
        assert_eq!(visit_source(None), "link");
    }
}
