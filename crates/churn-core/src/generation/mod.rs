//! Writing recovery emails: what a generator is given, what it returns, and the two
//! generators (templates, and an OpenAI-compatible LLM that falls back to them). Every draft,
//! whichever wrote it, carries the strategy's call-to-action button before its signature.
//!
//! The context is serialized whole into templates and LLM prompts, except the customer's
//! email address, which no email needs and which must not reach an LLM vendor.

pub mod html;
pub mod llm;
pub mod promises;
pub mod template;

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::domain::cta::CallToAction;
use crate::domain::settings::Testimonial;
use crate::domain::strategy::Strategy;

/// Everything an email may mention, already formatted for reading: the facts the project and
/// the event gave, and nothing else (decisions §15).
#[derive(Debug, Clone, Serialize)]
pub struct EmailContext {
    pub first_name: String,
    /// Never serialized: kept out of templates and LLM prompts.
    #[serde(skip)]
    pub customer_email: String,
    pub product: String,
    pub plan: String,
    /// The signature: "Ada Lovelace, founder of Acme", or "The Acme team" without a name.
    pub founder: String,
    pub founder_first: String,
    /// `settings.founder_name`.
    pub founder_name: Option<String>,
    pub support_email: String,
    pub product_url: Option<String>,
    /// Where the button leads: `settings.reactivation_url`, else `product_url`.
    pub reactivation_url: Option<String>,
    /// "14 months", "3 weeks"; absent when unknown.
    pub tenure: Option<String>,
    /// "$49.00/month"; absent when unknown.
    pub mrr: Option<String>,
    pub discounted_price: Option<String>,
    pub downgrade_price: Option<String>,
    pub discount_percent: i64,
    pub discount_months: i64,
    /// The discount's code: made at Stripe when the email is sent, else
    /// `settings.coupon_code`; absent when there is neither.
    pub coupon_code: Option<String>,
    pub pause_months: i64,
    /// The event's reason code (`other` when unknown), which picks the reason's sentences.
    pub reason_code: String,
    /// The customer's reason in words ("the price"), absent for `other`.
    pub reason: Option<String>,
    /// `settings.testimonials`: the only quotes an email may use.
    pub testimonials: Vec<Testimonial>,
    /// `settings.features`: the only feature names an email may use.
    pub features: Vec<String>,
    pub payment_failed: bool,
    pub language: String,
}

impl EmailContext {
    /// The primary call to action of this event's email for `strategy`.
    pub fn call_to_action(&self, strategy: Strategy) -> CallToAction {
        CallToAction::new(
            strategy,
            self.reactivation_url.as_deref(),
            self.coupon_code.as_deref(),
            &self.support_email,
            self.discount_percent,
        )
    }
}

/// One written email: subject, HTML and plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub subject: String,
    pub html: String,
    pub text: String,
    pub generator: GeneratorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratorKind {
    Template,
    Llm,
}

impl GeneratorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            GeneratorKind::Template => "template",
            GeneratorKind::Llm => "llm",
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GenerateError(pub String);

/// Writes the email of one strategy. Implementations must not fail silently: the caller
/// decides what a failure means (the LLM generator falls back to templates per variant).
pub trait Generator: Send + Sync {
    fn generate<'a>(
        &'a self,
        ctx: &'a EmailContext,
        strategy: Strategy,
    ) -> BoxFuture<'a, Result<Draft, GenerateError>>;

    /// The longest one `generate` call may take. A generation that started more than twice
    /// this long ago counts as interrupted, and the event may be generated again.
    fn time_limit(&self) -> Duration {
        Duration::from_secs(10)
    }
}
