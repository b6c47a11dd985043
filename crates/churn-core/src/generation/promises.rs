//! What a recovery email may promise (decisions §15): only the material the project gave. A
//! strategy without its material gets warnings (and is never recommended nor sent by
//! autopilot); an LLM draft that names a code, an amount, a feature or a person the facts do
//! not hold is refused, and the template writes that email instead.

use super::EmailContext;
use crate::domain::strategy::Strategy;

/// What the email of `strategy` lacks to keep its promises, as sentences for the founder.
pub fn warnings(ctx: &EmailContext, strategy: Strategy) -> Vec<String> {
    let lack = match strategy {
        Strategy::Discount if ctx.coupon_code.is_none() => {
            "No discount code: connect Stripe (each email then gets its own code) or set \
             settings.coupon_code to a code made in your billing system. This email offers the \
             discount without a code, to be applied by hand."
        }
        Strategy::SocialProof if ctx.testimonials.is_empty() => {
            "No testimonials: add what customers said in settings.testimonials. This email \
             quotes no one."
        }
        Strategy::UnusedFeature if ctx.features.is_empty() => {
            "No feature names: list them in settings.features. This email names no feature."
        }
        Strategy::FounderEmail if ctx.founder_name.is_none() => {
            "No founder's name: set settings.founder_name. This note is signed by the team."
        }
        _ => return Vec::new(),
    };
    vec![lack.to_owned()]
}

/// Refuses a written email that names what the facts do not hold: a code other than the
/// discount's, an amount or percentage not given, a quote or author outside the
/// testimonials, a listed feature outside the feature names, or a signature by someone else.
/// The checks are deliberately strict: a refused draft costs only the template's wording.
pub fn check_draft(
    ctx: &EmailContext,
    strategy: Strategy,
    subject: &str,
    body: &str,
) -> Result<(), String> {
    let facts = Facts::of(ctx);
    for text in [subject, body] {
        codes(&facts, ctx, text)?;
        amounts(&facts, ctx, text)?;
    }
    quotes(&facts, body)?;
    if strategy == Strategy::UnusedFeature {
        listed_features(ctx, body)?;
    }
    signature(ctx, body)
}

/// Everything the project gave, lower-cased, to look names up in.
struct Facts {
    text: String,
    quotes: Vec<String>,
}

impl Facts {
    fn of(ctx: &EmailContext) -> Self {
        let mut parts = vec![
            ctx.product.clone(),
            ctx.plan.clone(),
            ctx.founder.clone(),
            ctx.first_name.clone(),
            ctx.support_email.clone(),
        ];
        parts.extend(ctx.coupon_code.clone());
        parts.extend(ctx.features.iter().cloned());
        for t in &ctx.testimonials {
            parts.push(t.quote.clone());
            parts.push(t.author.clone());
        }
        Self {
            text: parts.join("\n").to_lowercase(),
            quotes: ctx.testimonials.iter().map(|t| squash(&t.quote)).collect(),
        }
    }
}

fn squash(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Code-like words (capitals and at least two digits, five characters or more, like
/// `SAVE50NOW`), and any mention of a code when there is none.
fn codes(facts: &Facts, ctx: &EmailContext, text: &str) -> Result<(), String> {
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
        let word = word.trim_matches(['-', '_']);
        let digits = word.chars().filter(char::is_ascii_digit).count();
        let code_like = word.chars().count() >= 5
            && digits >= 2
            && word.chars().any(|c| c.is_ascii_uppercase())
            && !word.chars().any(|c| c.is_ascii_lowercase());
        if code_like && !facts.text.contains(&word.to_lowercase()) {
            return Err(format!("names a code that was not given ({word})"));
        }
    }
    let lower = text.to_lowercase();
    if ctx.coupon_code.is_none()
        && [
            "coupon",
            "promo",
            "discount code",
            "promotion code",
            "code:",
        ]
        .iter()
        .any(|w| lower.contains(w))
    {
        return Err("mentions a code while there is none".into());
    }
    Ok(())
}

/// Currency amounts must be the event's prices; percentages the discount's (or 100).
fn amounts(facts: &Facts, ctx: &EmailContext, text: &str) -> Result<(), String> {
    let given: Vec<String> = [&ctx.mrr, &ctx.discounted_price, &ctx.downgrade_price]
        .into_iter()
        .flatten()
        .flat_map(|p| numbers(p).into_iter().map(|(n, _)| n))
        .collect();
    let chars: Vec<char> = text.chars().collect();
    for (number, at) in numbers(text) {
        let end = at + number.chars().count();
        let before = chars[..at].iter().rev().find(|c| !c.is_whitespace());
        let after: String = chars[end..].iter().take(9).collect::<String>();
        let after = after.trim_start();
        let money = before.is_some_and(|c| "$€£¥₹".contains(*c))
            || after
                .split(|c: char| !c.is_ascii_alphabetic())
                .next()
                .is_some_and(|w| CURRENCIES.contains(&w));
        let percent = after.starts_with('%') || after.to_lowercase().starts_with("percent");
        let value = number.replace(',', "");
        if money && !given.iter().any(|g| g.replace(',', "") == value) {
            return Err(format!("names an amount that was not given ({number})"));
        }
        if percent
            && value != ctx.discount_percent.to_string()
            && value != "100"
            && !facts.text.contains(&format!("{number}%"))
        {
            return Err(format!("names a percentage that was not given ({number}%)"));
        }
    }
    Ok(())
}

const CURRENCIES: [&str; 10] = [
    "USD", "EUR", "GBP", "CAD", "AUD", "INR", "JPY", "CHF", "SEK", "NZD",
];

/// The numbers of a text (digits with `,` and `.` inside) and where each starts, in chars.
fn numbers(text: &str) -> Vec<(String, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || (matches!(chars[i], ',' | '.')
                        && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            found.push((chars[start..i].iter().collect(), start));
        } else {
            i += 1;
        }
    }
    found
}

/// Quoted passages of four words or more must come from a testimonial, and an attribution
/// line (`— Name`) must name a testimonial's author.
fn quotes(facts: &Facts, body: &str) -> Result<(), String> {
    let mut rest = body;
    while let Some(open) = rest.find(['“', '"']) {
        let after = &rest[open + rest[open..].chars().next().map_or(1, char::len_utf8)..];
        let Some(close) = after.find(['”', '"']) else {
            break;
        };
        let quoted = squash(&after[..close]);
        if quoted.split(' ').count() >= 4 && !facts.quotes.iter().any(|q| q.contains(&quoted)) {
            return Err(format!("quotes words no testimonial holds ({quoted})"));
        }
        rest = &after[close + after[close..].chars().next().map_or(1, char::len_utf8)..];
    }
    for line in body.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix(['—', '–']) {
            let name = name.trim().to_lowercase();
            if !name.is_empty() && !facts.text.contains(&name) {
                return Err(format!("attributes words to someone not given ({name})"));
            }
        }
    }
    Ok(())
}

/// Every listed item of an unused_feature email must name one of the given features.
fn listed_features(ctx: &EmailContext, body: &str) -> Result<(), String> {
    for line in body.lines().map(str::trim) {
        let Some(item) = line.strip_prefix(['-', '•', '*']) else {
            continue;
        };
        let item = item.to_lowercase();
        if !ctx
            .features
            .iter()
            .any(|f| item.contains(&f.to_lowercase()))
        {
            return Err(format!("lists a feature not given ({})", item.trim()));
        }
    }
    Ok(())
}

/// The closing paragraph must be signed by the founder given, or by the product's team.
fn signature(ctx: &EmailContext, body: &str) -> Result<(), String> {
    let last = body
        .trim()
        .rsplit("\n\n")
        .next()
        .unwrap_or_default()
        .to_lowercase();
    let by_founder = ctx
        .founder_name
        .as_deref()
        .and_then(|n| n.split_whitespace().next())
        .is_some_and(|first| last.contains(&first.to_lowercase()));
    if by_founder || last.contains(&ctx.product.to_lowercase()) {
        Ok(())
    } else {
        Err("is signed by someone the project did not name".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::settings::Testimonial;
    use crate::generation::template::tests::context;

    fn with_material() -> EmailContext {
        EmailContext {
            testimonials: vec![Testimonial {
                quote: "We cut our reporting time in half.".into(),
                author: "Priya, Head of Ops at Lumen".into(),
            }],
            features: vec!["Scheduled reports".into()],
            ..context()
        }
    }

    #[test]
    fn a_draft_within_the_facts_passes() {
        let body = "Hi Dana,\n\nHere's 20% off: $39.20/month instead of $49.00/month with code \
                    WINBACK20-019A2B.\n\n“We cut our reporting time in half.”\n— Priya, Head of \
                    Ops at Lumen\n\n- Scheduled reports\n\nBest,\nAda";
        assert_eq!(
            check_draft(&with_material(), Strategy::UnusedFeature, "20% off", body),
            Ok(())
        );
    }

    #[test]
    fn invented_codes_amounts_quotes_features_and_senders_are_refused() {
        let ctx = with_material();
        let refused = |strategy, body: &str| check_draft(&ctx, strategy, "Hi", body).is_err();
        let sign = |s: &str| format!("Hi Dana,\n\n{s}\n\nBest,\nAda");
        assert!(refused(
            Strategy::Discount,
            &sign("Use code SAVE50NOW today.")
        ));
        assert!(refused(Strategy::Discount, &sign("Take 50% off.")));
        assert!(refused(Strategy::Discount, &sign("Only $19.99 a month.")));
        assert!(refused(Strategy::Discount, &sign("Only 19 USD a month.")));
        assert!(refused(
            Strategy::SocialProof,
            &sign("\"This tool changed our whole team\" says a customer.")
        ));
        assert!(refused(
            Strategy::SocialProof,
            &sign("“We cut our reporting time in half.”\n— Jane Doe, CTO")
        ));
        assert!(refused(Strategy::UnusedFeature, &sign("- AI forecasting")));
        assert!(refused(
            Strategy::ValueRecap,
            "Hi Dana,\n\nWe miss you.\n\nCheers,\nJohn, CEO"
        ));
        let no_code = EmailContext {
            coupon_code: None,
            ..context()
        };
        assert!(
            check_draft(
                &no_code,
                Strategy::FeedbackRequest,
                "Hi",
                &sign("Here's a coupon for you.")
            )
            .is_err()
        );
    }

    #[test]
    fn warnings_name_the_missing_material() {
        let bare = EmailContext {
            coupon_code: None,
            founder_name: None,
            testimonials: Vec::new(),
            features: Vec::new(),
            ..context()
        };
        for strategy in Strategy::ALL {
            let expected = matches!(
                strategy,
                Strategy::Discount
                    | Strategy::SocialProof
                    | Strategy::UnusedFeature
                    | Strategy::FounderEmail
            );
            assert_eq!(
                !warnings(&bare, strategy).is_empty(),
                expected,
                "{strategy:?}"
            );
            assert!(
                warnings(&with_material(), strategy).is_empty(),
                "{strategy:?}"
            );
        }
    }
}
