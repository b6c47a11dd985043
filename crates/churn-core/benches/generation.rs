//! Server-side cost of writing an event's nine emails with the template generator and
//! ranking them. Target: at most 2 ms for all nine.

use std::hint::black_box;

use churn_core::domain::ranking::{RankingInput, rank};
use churn_core::domain::strategy::{ReasonCode, Strategy};
use churn_core::generation::EmailContext;
use churn_core::generation::template::TemplateGenerator;
use criterion::{Criterion, criterion_group, criterion_main};

fn context() -> EmailContext {
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
        reactivation_url: None,
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
        testimonials: Vec::new(),
        features: vec!["Scheduled reports".into()],
        payment_failed: false,
        language: "en".into(),
    }
}

fn nine_variants(c: &mut Criterion) {
    let generator = TemplateGenerator::new();
    let ctx = context();
    let input = RankingInput {
        reason: Some(ReasonCode::TooExpensive),
        tenure_days: Some(420),
        mrr_cents: Some(4900),
        ..Default::default()
    };
    c.bench_function("nine template variants and their ranking", |b| {
        b.iter(|| {
            for strategy in Strategy::ALL {
                black_box(generator.render(black_box(&ctx), strategy).unwrap());
            }
            black_box(rank(black_box(&input)))
        })
    });
}

criterion_group!(benches, nine_variants);
criterion_main!(benches);
