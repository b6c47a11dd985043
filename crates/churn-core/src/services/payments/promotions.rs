//! A discount email's code made real at Stripe when the email is sent (decisions §15, and
//! dunning's last chance, §18): a coupon (`percent_off`, `duration=repeating`,
//! `duration_in_months`) and a promotion code of it carrying the email's code, for that
//! customer when known, redeemable once. The idempotency keys derive from what the email is
//! about (the variant, the payment failure), so a send tried again after a failure replays
//! the provider's first answers instead of making a second coupon.

use super::Payments;
use crate::domain::provider::Provider;
use crate::error::{Error, Result};
use crate::providers::stripe::NewCoupon;

/// What a discount email promises: its code and the coupon behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Promotion {
    pub project_id: String,
    /// What the email is about, for the idempotency keys: `variant-<id>`, `failure-<id>-<percent>`.
    pub scope: String,
    pub code: String,
    pub percent_off: i64,
    pub months: i64,
    pub customer_id: Option<String>,
}

impl Payments {
    /// Creates the coupon and the promotion code of `promotion`: a provider error is 502, and
    /// Stripe disconnected since the code was written is 409 (the code cannot be made real).
    pub(crate) async fn issue(&self, promotion: &Promotion) -> Result<()> {
        let Some(client) = self
            .connection(&promotion.project_id, Provider::Stripe)
            .await?
            .and_then(|c| self.stripe(&c))
        else {
            return Err(Error::Conflict(
                "Stripe is no longer connected: the discount code of this email cannot be created"
                    .into(),
            ));
        };
        let refused = |e| Error::upstream("Stripe could not create the discount code", e);
        let coupon = NewCoupon {
            percent_off: u32::try_from(promotion.percent_off).unwrap_or_default(),
            duration_in_months: u32::try_from(promotion.months).unwrap_or_default(),
            name: None,
            metadata: Vec::new(),
        };
        let key = |what: &str| format!("churn-{}-{what}", promotion.scope);
        let coupon = client
            .create_coupon(&coupon, &key("coupon"))
            .await
            .map_err(refused)?;
        client
            .create_promotion_code(
                &coupon.id,
                &promotion.code,
                promotion.customer_id.as_deref(),
                &key("promotion-code"),
            )
            .await
            .map_err(refused)?;
        Ok(())
    }
}
