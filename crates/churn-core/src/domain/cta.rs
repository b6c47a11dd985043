//! The one primary call to action of a recovery email: a button to the project's
//! reactivation URL (carrying the offer of the strategy), or, without a URL, a reply to the
//! support address.

use super::strategy::Strategy;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallToAction {
    pub label: String,
    /// An http(s) URL, or `mailto:<support address>`.
    pub href: String,
}

impl CallToAction {
    /// `reactivation_url` is the effective one (the setting, else `product_url`); `coupon` is
    /// the discount variant's code.
    pub fn new(
        strategy: Strategy,
        reactivation_url: Option<&str>,
        coupon: Option<&str>,
        support_email: &str,
        discount_percent: i64,
    ) -> Self {
        let label = match strategy {
            Strategy::Discount => format!("Claim {discount_percent}% off"),
            Strategy::PauseOption => "Pause instead of cancelling".to_owned(),
            Strategy::DowngradeOffer => "Switch to a smaller plan".to_owned(),
            _ => "Reactivate my account".to_owned(),
        };
        let Some(mut url) = reactivation_url.and_then(|u| url::Url::parse(u).ok()) else {
            return Self {
                label: match strategy {
                    Strategy::Discount | Strategy::PauseOption | Strategy::DowngradeOffer => label,
                    _ => "Reply to us".to_owned(),
                },
                href: format!("mailto:{support_email}"),
            };
        };
        match (strategy, coupon) {
            (Strategy::Discount, Some(code)) => {
                url.query_pairs_mut().append_pair("coupon", code);
            }
            (Strategy::PauseOption, _) => {
                url.query_pairs_mut().append_pair("offer", "pause");
            }
            (Strategy::DowngradeOffer, _) => {
                url.query_pairs_mut().append_pair("offer", "downgrade");
            }
            _ => {}
        }
        Self {
            label,
            href: url.into(),
        }
    }

    /// The line of the plain-text part: the label and where it leads.
    pub fn text_line(&self) -> String {
        let target = self.href.strip_prefix("mailto:").unwrap_or(&self.href);
        format!("{}: {target}", self.label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_carries_the_offer_of_the_strategy() {
        let cta = |s, url| CallToAction::new(s, url, Some("WINBACK20-ABC"), "help@acme.io", 20);
        let base = Some("https://acme.io/billing?from=email");
        for (strategy, offer) in [
            (Strategy::Discount, "&coupon=WINBACK20-ABC"),
            (Strategy::PauseOption, "&offer=pause"),
            (Strategy::DowngradeOffer, "&offer=downgrade"),
            (Strategy::ValueRecap, ""),
        ] {
            let expected = format!("https://acme.io/billing?from=email{offer}");
            assert_eq!(cta(strategy, base).href, expected, "{strategy:?}");
        }
        let reply = cta(Strategy::ValueRecap, None);
        assert_eq!(reply.href, "mailto:help@acme.io");
        assert_eq!(reply.text_line(), "Reply to us: help@acme.io");
        assert_eq!(cta(Strategy::Discount, None).label, "Claim 20% off");
    }
}
