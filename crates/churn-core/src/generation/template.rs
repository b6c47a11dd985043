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
    use crate::domain::settings::Testimonial;
    use crate::domain::strategy::ReasonCode;
    use crate::generation::promises;

    /// An event of a customer who left over the price, with every material given.
    pub(crate) fn context() -> EmailContext {
        EmailContext {
            first_name: "Dana".into(),
            customer_email: "dana@northwind.example".into(),
            product: "Acme Analytics".into(),
            plan: "the Growth plan".into(),
            founder: "Ada Lovelace, founder of Acme Analytics".into(),
            founder_first: "Ada".into(),
            founder_name: Some("Ada Lovelace".into()),
            support_email: "support@acme.example".into(),
            product_url: Some("https://acme.example".into()),
            reactivation_url: Some("https://acme.example/welcome-back".into()),
            tenure: Some("14 months".into()),
            mrr: Some("$49.00/month".into()),
            discounted_price: Some("$39.20/month".into()),
            downgrade_price: Some("$24.50/month".into()),
            discount_percent: 20,
            discount_months: 3,
            coupon_code: Some("WINBACK20-019A2B".into()),
            pause_months: 3,
            reason_code: "too_expensive".into(),
            reason: Some("the price".into()),
            testimonials: vec![
                Testimonial {
                    quote: "We cut our weekly reporting from a day to an hour.".into(),
                    author: "Priya Shah, Head of Operations at Lumen".into(),
                },
                Testimonial {
                    quote: "Setup took one afternoon.".into(),
                    author: "Tom, founder of Fieldnote".into(),
                },
            ],
            features: vec!["Scheduled reports".into(), "Slack alerts".into()],
            payment_failed: false,
            language: "en".into(),
        }
    }

    /// `context()` for another reason.
    fn for_reason(ctx: &EmailContext, reason: ReasonCode) -> EmailContext {
        EmailContext {
            reason_code: reason.as_str().to_owned(),
            reason: reason.phrase().map(str::to_owned),
            ..ctx.clone()
        }
    }

    /// The same event with no material at all: no code, testimonials, features or founder.
    fn bare() -> EmailContext {
        EmailContext {
            founder: "The Acme Analytics team".into(),
            founder_first: "the founder".into(),
            founder_name: None,
            coupon_code: None,
            testimonials: Vec::new(),
            features: Vec::new(),
            ..context()
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

    /// Every template for every reason code, with the material and without: one snapshot a
    /// template, to read as the customer would.
    #[test]
    fn every_template_for_every_reason() {
        let generator = TemplateGenerator::new();
        for strategy in Strategy::ALL {
            let mut shown = String::new();
            for (material, base) in [("with material", context()), ("without material", bare())] {
                for reason in ReasonCode::ALL {
                    let draft = generator
                        .render(&for_reason(&base, reason), strategy)
                        .unwrap();
                    shown.push_str(&format!(
                        "==== {} ({material}) ====\nSubject: {}\n\n{}\n\n",
                        reason.as_str(),
                        draft.subject,
                        draft.text
                    ));
                }
            }
            insta::assert_snapshot!(format!("reasons_{}", strategy.as_str()), shown);
        }
    }

    /// Phrases that presume a reason: only an email for that reason may hold them.
    const PRESUMES: [(ReasonCode, &[&str]); 7] = [
        (
            ReasonCode::TooExpensive,
            &["the price", "costs more", "money is tight", "budget"],
        ),
        (
            ReasonCode::MissingFeatures,
            &["missing", "specific you needed"],
        ),
        (
            ReasonCode::NotUsingEnough,
            &[
                "weren't using",
                "much use",
                "sitting unused",
                "small part of",
            ],
        ),
        (
            ReasonCode::SwitchingCompetitor,
            &["switching", "another tool", "comparing"],
        ),
        (
            ReasonCode::TechnicalIssues,
            &[
                "ran into",
                "didn't work",
                "bug",
                "trouble with",
                "technical",
            ],
        ),
        (
            ReasonCode::PoorSupport,
            &["our support", "better help", "answer it properly"],
        ),
        (
            ReasonCode::DontNeedAnymore,
            &["don't need", "no longer need", "now and then"],
        ),
    ];

    /// Questions that ask why the customer left.
    const ASKS_WHY: [&str; 4] = ["what made you", "why you", "why did you", "reason for"];

    /// The sentences of a text: split at line and paragraph breaks and after `.`, `!`, `?`.
    fn sentences(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let mut current = String::new();
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                current.push(c);
                if matches!(c, '.' | '!' | '?') && chars.peek() == Some(&' ') {
                    out.push(std::mem::take(&mut current).trim().to_owned());
                }
            }
            out.push(current.trim().to_owned());
        }
        out.retain(|s| !s.is_empty());
        out
    }

    /// The mechanical rules of decisions §15, on every template × reason × material × payment
    /// state, with lower-case names so that a sentence starting with one shows.
    #[test]
    fn every_email_keeps_the_rules() {
        let generator = TemplateGenerator::new();
        let lower = |ctx: EmailContext| EmailContext {
            first_name: "dana".into(),
            product: "acme".into(),
            ..ctx
        };
        for (has_material, base) in [(true, lower(context())), (false, lower(bare()))] {
            for payment_failed in [false, true] {
                for reason in ReasonCode::ALL {
                    let ctx = EmailContext {
                        payment_failed,
                        ..for_reason(&base, reason)
                    };
                    for strategy in Strategy::ALL {
                        let draft = generator.render(&ctx, strategy).unwrap();
                        let case = format!(
                            "{strategy:?} for {reason:?} (material: {has_material}, payment failed: {payment_failed})"
                        );
                        let text = format!("{}\n{}", draft.subject, draft.text);
                        let lowered = text.to_lowercase();
                        for sentence in sentences(&text) {
                            let first = sentence
                                .trim_start_matches(['“', '"', '\'', '‘', '(', '—', '–', '-', ' '])
                                .chars()
                                .next();
                            assert!(
                                !first.is_some_and(char::is_lowercase),
                                "{case}: a sentence starts in lower case: {sentence:?}"
                            );
                        }
                        for (other, phrases) in PRESUMES.iter().filter(|(r, _)| *r != reason) {
                            for phrase in *phrases {
                                assert!(
                                    !lowered.contains(phrase),
                                    "{case}: {phrase:?} presumes {other:?}:\n{text}"
                                );
                            }
                        }
                        if strategy == Strategy::FeedbackRequest && reason != ReasonCode::Other {
                            for ask in ASKS_WHY {
                                assert!(!lowered.contains(ask), "{case}: asks again:\n{text}");
                            }
                        }
                        let warned = !promises::warnings(&ctx, strategy).is_empty();
                        assert_eq!(
                            warned,
                            !has_material && lacks_without_material(strategy),
                            "{case}"
                        );
                        if !has_material {
                            assert!(
                                !lowered.contains("code") && !lowered.contains('“'),
                                "{case}: names a code or quotes without material:\n{text}"
                            );
                            assert!(
                                !text.lines().any(|l| l.starts_with("- ")),
                                "{case}: lists features without material:\n{text}"
                            );
                        } else if strategy == Strategy::Discount {
                            assert!(text.contains("WINBACK20-019A2B"), "{case}");
                        } else if strategy == Strategy::SocialProof {
                            assert!(
                                text.contains(
                                    "“Setup took one afternoon.”\n— Tom, founder of Fieldnote"
                                ),
                                "{case}"
                            );
                        } else if strategy == Strategy::UnusedFeature {
                            assert!(
                                text.contains("- Scheduled reports\n- Slack alerts"),
                                "{case}"
                            );
                        } else {
                            assert!(
                                !lowered.contains("code"),
                                "{case}: a code where none is offered"
                            );
                        }
                    }
                }
            }
        }
    }

    fn lacks_without_material(strategy: Strategy) -> bool {
        matches!(
            strategy,
            Strategy::Discount
                | Strategy::SocialProof
                | Strategy::UnusedFeature
                | Strategy::FounderEmail
        )
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
