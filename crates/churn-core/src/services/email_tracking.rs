//! Opens and clicks of sent emails, from the signed pixel and link routes (behaviour that
//! customers send through `POST /track` is `behavior.rs`, `ingest.rs` and `group.rs`).

use super::Tracking;
use crate::domain::variant::{VariantAction, delivered, transition};
use crate::error::{Error, Result};
use crate::store::variants;

fn not_found() -> Error {
    Error::NotFound("no route for this path".into())
}

impl Tracking {
    /// Records an open for the variant a signed token names; 404 for a forged token.
    pub async fn track_open(&self, token: &str) -> Result<()> {
        let variant_id = self.keys.verify_token(token).ok_or_else(not_found)?;
        self.observe(variant_id, VariantAction::Open).await
    }

    /// Records a click and returns where to send the reader; 404 unless both the token and
    /// the target's signature are ours, so the route is no open redirect.
    pub async fn track_click(&self, token: &str, target: &str, signature: &str) -> Result<String> {
        let variant_id = self.keys.verify_token(token).ok_or_else(not_found)?;
        if !self.keys.verify_click(variant_id, target, signature) {
            return Err(not_found());
        }
        self.observe(variant_id, VariantAction::Click).await?;
        Ok(target.to_owned())
    }

    async fn observe(&self, variant_id: &str, what: VariantAction) -> Result<()> {
        for _ in 0..3 {
            let variant = variants::by_id(self.core.store.reader(), variant_id)
                .await?
                .ok_or_else(not_found)?;
            // Nothing to record unless the email went out (not a draft, a send in flight or a bounce).
            let from = variant.status;
            if !delivered(from) {
                return Ok(());
            }
            let to = transition(from, what).unwrap_or(from);
            let click = what == VariantAction::Click;
            let now = self.core.now();
            let mut tx = self.core.store.begin().await?;
            if variants::record_observation(&mut *tx, variant_id, from, to, click, now).await? {
                // The first click is the outcome, told once; later ones only count.
                if click && variants::first_click(&mut *tx, variant_id, now).await? {
                    let clicked = crate::domain::webhooks::EventType::VariantClicked;
                    super::webhooks::emit_variant(&mut tx, clicked, variant_id, now).await?;
                }
                tx.commit().await?;
                return Ok(());
            }
        }
        Ok(())
    }
}
