//! An OpenAI-compatible chat-completions generator. Each variant is one request through the
//! operator client of [`crate::outbound`]; a failed, slow or malformed answer falls back to
//! the template for that variant, so generation never fails because of the model. The prompt
//! carries only the facts the project and the event gave; a draft naming a code, an amount, a
//! feature or a person outside them is refused ([`promises::check_draft`]) and falls back too.
//!
//! At most [`MAX_CONCURRENT_CALLS`] requests run at once in a process, whatever the number of
//! generations: the rest wait for a slot. Waiting counts against the variant's time limit, so
//! under load variants fall back to templates instead of queueing without end.

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Semaphore;

use super::template::TemplateGenerator;
use super::{Draft, EmailContext, GenerateError, Generator, GeneratorKind, html, promises};
use crate::domain::strategy::Strategy;
use crate::domain::variant::{MAX_BODY_CHARS, MAX_SUBJECT_CHARS};
use crate::outbound::Http;

/// The process-wide cap on LLM requests in flight (nine per generation).
pub const MAX_CONCURRENT_CALLS: usize = 16;

pub struct LlmGenerator {
    http: Http,
    endpoint: String,
    api_key: Option<String>,
    model: String,
    /// For one variant: waiting for a slot, the request and reading the answer.
    timeout: Duration,
    slots: Semaphore,
    fallback: TemplateGenerator,
}

impl LlmGenerator {
    pub fn new(
        http: Http,
        base_url: &str,
        api_key: Option<String>,
        model: String,
        timeout: Duration,
    ) -> Self {
        Self {
            http,
            endpoint: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            api_key,
            model,
            timeout,
            slots: Semaphore::new(MAX_CONCURRENT_CALLS),
            fallback: TemplateGenerator::new(),
        }
    }

    async fn ask(&self, ctx: &EmailContext, strategy: Strategy) -> Result<Draft, GenerateError> {
        let fail = |what: &str| GenerateError(format!("LLM {what}"));
        let body = json!({
            "model": self.model,
            "temperature": 0.7,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt(ctx, strategy)},
            ],
        });
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| fail("slots closed"))?;
        let mut request = self
            .http
            .post(&self.endpoint)
            .timeout(self.timeout)
            .json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| GenerateError(format!("LLM request failed: {e}")))?;
        let completion: Completion = response
            .json()
            .map_err(|_| fail("answer is not a chat completion"))?;
        let content = completion
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| fail("answer has no choices"))?
            .message
            .content;
        let email: EmailJson = serde_json::from_str(strip_fences(&content))
            .map_err(|_| fail("content is not the requested JSON"))?;
        let subject = email.subject.trim();
        let text = email.body.trim();
        if subject.is_empty()
            || subject.chars().count() > MAX_SUBJECT_CHARS
            || subject.contains('\n')
        {
            return Err(fail("subject is empty, too long or multi-line"));
        }
        if text.is_empty() || text.chars().count() > MAX_BODY_CHARS {
            return Err(fail("body is empty or too long"));
        }
        if text.contains("{{") || text.contains('<') {
            return Err(fail("body contains markup or placeholders"));
        }
        promises::check_draft(ctx, strategy, subject, text)
            .map_err(|why| GenerateError(format!("LLM draft {why}")))?;
        let (text, html) = html::with_call_to_action(text, &ctx.call_to_action(strategy));
        Ok(Draft {
            subject: subject.to_owned(),
            html,
            text,
            generator: GeneratorKind::Llm,
        })
    }
}

impl Generator for LlmGenerator {
    fn generate<'a>(
        &'a self,
        ctx: &'a EmailContext,
        strategy: Strategy,
    ) -> BoxFuture<'a, Result<Draft, GenerateError>> {
        Box::pin(async move {
            let answer = tokio::time::timeout(self.timeout, self.ask(ctx, strategy))
                .await
                .unwrap_or_else(|_| Err(GenerateError("LLM timed out".into())));
            match answer {
                Ok(draft) => Ok(draft),
                Err(e) => {
                    tracing::warn!(strategy = strategy.as_str(), error = %e, "LLM generation failed; using the template");
                    self.fallback.render(ctx, strategy)
                }
            }
        })
    }

    fn time_limit(&self) -> Duration {
        self.timeout
    }
}

const SYSTEM_PROMPT: &str = "You write short, warm, honest win-back emails for a subscription software company. \
Plain text only, no markdown, no HTML, no placeholders. Answer with a JSON object \
{\"subject\": string, \"body\": string}. The subject is one line under 90 characters. The body \
greets the customer by first name, has 3 to 6 short paragraphs, and ends with the sender's signature. \
Write no URLs: a button to come back is added before the signature. Use only the facts given: \
name no code, price, percentage, feature, customer or person that is not in them, quote only the \
testimonials given, word for word, and sign as the founder given (else as the product's team). \
When a fact the strategy needs is missing, write around it without inventing one. Mention the \
customer's reason only if it is given, and never ask again for a reason already given. Start \
every sentence with a capital letter.";

fn prompt(ctx: &EmailContext, strategy: Strategy) -> String {
    let goal = match strategy {
        Strategy::ValueRecap => "remind them of the value they received",
        Strategy::UnusedFeature => "point out the features given that they may not have tried",
        Strategy::DowngradeOffer => "offer a cheaper plan instead of cancelling",
        Strategy::PauseOption => "offer to pause the subscription instead of cancelling",
        Strategy::FounderEmail => "write a personal note from the founder asking what went wrong",
        Strategy::PainPointFix => {
            "acknowledge the problem that made them leave and offer to fix it"
        }
        Strategy::SocialProof => "share what other customers said (the testimonials given)",
        Strategy::FeedbackRequest => "ask for one sentence of feedback",
        Strategy::Discount => "offer the discount given, with its code when one is given",
    };
    let facts = serde_json::to_string_pretty(ctx).unwrap_or_default();
    format!(
        "Strategy: {} — {goal}.\nThe only facts you may use (codes, amounts and names exactly as given):\n{facts}",
        strategy.as_str()
    )
}

/// Some models wrap JSON in ```json fences despite being asked not to.
fn strip_fences(content: &str) -> &str {
    let trimmed = content.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|s| s.strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(trimmed)
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    content: String,
}

#[derive(Deserialize)]
struct EmailJson {
    subject: String,
    body: String,
}
