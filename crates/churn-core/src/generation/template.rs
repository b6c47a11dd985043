//! The embedded default generator: one minijinja template per strategy and language, kept as
//! data under `templates/<language>/<strategy>.txt` (first line `Subject: …`, then the body).

use futures::future::BoxFuture;
use minijinja::Environment;

use super::{Draft, EmailContext, GenerateError, Generator, GeneratorKind, html};
use crate::domain::strategy::Strategy;

const FALLBACK_LANGUAGE: &str = "en";

/// (`<language>/<strategy>`, source) of every embedded template.
const TEMPLATES: &[(&str, &str)] = &[
    (
        "en/value_recap",
        include_str!("../../templates/en/value_recap.txt"),
    ),
    (
        "en/unused_feature",
        include_str!("../../templates/en/unused_feature.txt"),
    ),
    (
        "en/downgrade_offer",
        include_str!("../../templates/en/downgrade_offer.txt"),
    ),
    (
        "en/pause_option",
        include_str!("../../templates/en/pause_option.txt"),
    ),
    (
        "en/founder_email",
        include_str!("../../templates/en/founder_email.txt"),
    ),
    (
        "en/pain_point_fix",
        include_str!("../../templates/en/pain_point_fix.txt"),
    ),
    (
        "en/social_proof",
        include_str!("../../templates/en/social_proof.txt"),
    ),
    (
        "en/feedback_request",
        include_str!("../../templates/en/feedback_request.txt"),
    ),
    (
        "en/discount",
        include_str!("../../templates/en/discount.txt"),
    ),
];

pub struct TemplateGenerator {
    env: Environment<'static>,
}

impl Default for TemplateGenerator {
    fn default() -> Self {
        Self::new()
    }
}

impl TemplateGenerator {
    pub fn new() -> Self {
        let mut env = Environment::new();
        for (name, source) in TEMPLATES {
            env.add_template(name, source)
                .expect("embedded templates are valid (checked by tests)");
        }
        Self { env }
    }

    /// Renders synchronously; the template generator never waits on anything.
    pub fn render(&self, ctx: &EmailContext, strategy: Strategy) -> Result<Draft, GenerateError> {
        let wanted = name(&ctx.language, strategy.as_str());
        let template = self
            .env
            .get_template(&wanted)
            .or_else(|_| {
                self.env
                    .get_template(&name(FALLBACK_LANGUAGE, strategy.as_str()))
            })
            .map_err(|e| GenerateError(e.to_string()))?;
        let rendered = template
            .render(minijinja::value::Serde(ctx))
            .map_err(|e| GenerateError(e.to_string()))?;
        let (subject, body) = split_subject(&rendered)
            .ok_or_else(|| GenerateError(format!("template {wanted} has no subject line")))?;
        let (text, html) = html::with_call_to_action(&tidy(body), &ctx.call_to_action(strategy));
        Ok(Draft {
            subject: subject.to_owned(),
            html,
            text,
            generator: GeneratorKind::Template,
        })
    }
}

impl Generator for TemplateGenerator {
    fn generate<'a>(
        &'a self,
        ctx: &'a EmailContext,
        strategy: Strategy,
    ) -> BoxFuture<'a, Result<Draft, GenerateError>> {
        Box::pin(async move { self.render(ctx, strategy) })
    }
}

fn name(language: &str, strategy: &str) -> String {
    format!("{language}/{strategy}")
}

fn split_subject(rendered: &str) -> Option<(&str, &str)> {
    let (first, rest) = rendered.split_once('\n')?;
    let subject = first.strip_prefix("Subject:")?.trim();
    (!subject.is_empty()).then_some((subject, rest))
}

/// Collapses the blank lines that conditional blocks leave behind.
fn tidy(body: &str) -> String {
    body.split("\n\n")
        .map(|p| p.trim_matches('\n').trim_end())
        .filter(|p| !p.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn context() -> EmailContext {
        EmailContext {
            first_name: "Dana".into(),
            customer_email: "dana@northwind.example".into(),
            product: "Acme Analytics".into(),
            plan: "the Growth plan".into(),
            founder: "Ada Lovelace, founder of Acme Analytics".into(),
            founder_first: "Ada".into(),
            support_email: "support@acme.example".into(),
            product_url: Some("https://acme.example".into()),
            reactivation_url: Some("https://acme.example/welcome-back".into()),
            tenure: Some("14 months".into()),
            mrr: Some("$49.00/month".into()),
            discounted_price: Some("$39.20/month".into()),
            downgrade_price: Some("$24.50/month".into()),
            discount_percent: 20,
            discount_months: 3,
            coupon_code: "WINBACK20-019A2B".into(),
            pause_months: 3,
            reason: Some("the price".into()),
            payment_failed: false,
            language: "en".into(),
        }
    }

    #[test]
    fn every_strategy_renders_a_subject_text_and_html() {
        let generator = TemplateGenerator::new();
        for strategy in Strategy::ALL {
            let draft = generator.render(&context(), strategy).unwrap();
            assert!(
                !draft.subject.is_empty() && draft.subject.len() <= 200,
                "{strategy:?}"
            );
            assert!(
                draft.text.starts_with("Hi Dana,"),
                "{strategy:?}: {}",
                draft.text
            );
            assert!(
                !draft.text.contains("{{") && !draft.text.contains("{%"),
                "{strategy:?}"
            );
            assert!(!draft.text.contains("\n\n\n"), "{strategy:?}");
            assert!(draft.html.contains("<p>Hi Dana,</p>"), "{strategy:?}");
        }
        let discount = generator.render(&context(), Strategy::Discount).unwrap();
        assert!(
            discount.text.contains("WINBACK20-019A2B") && discount.subject.starts_with("20% off")
        );
    }

    /// The nine emails of one fixed event, as a customer would receive them.
    #[test]
    fn rendered_emails() {
        let generator = TemplateGenerator::new();
        for strategy in Strategy::ALL {
            let draft = generator.render(&context(), strategy).unwrap();
            let shown = format!(
                "Subject: {}\n\n{}\n\n---- HTML ----\n{}\n",
                draft.subject,
                draft.text,
                draft.html.replace("><", ">\n<")
            );
            insta::assert_snapshot!(format!("email_{}", strategy.as_str()), shown);
        }
    }

    #[test]
    fn unknown_languages_fall_back_to_english() {
        let ctx = EmailContext {
            language: "xx".into(),
            ..context()
        };
        assert!(
            TemplateGenerator::new()
                .render(&ctx, Strategy::PauseOption)
                .is_ok()
        );
    }
}
