//! The mapping of real provider payloads (fixtures of both Stripe API versions and of
//! Razorpay) onto what they mean for churn.

use churn_core::domain::provider_events::{self, Cancellation, CardExpiring, Mapped, Success, Who};
use churn_core::domain::strategy::ReasonCode;
use churn_core::time;
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/providers/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn failure(mapped: Mapped) -> provider_events::Failure {
    match mapped {
        Mapped::Failure(f) => *f,
        other => panic!("not a failure: {other:?}"),
    }
}

#[test]
fn stripe_invoice_failure_in_the_current_shape() {
    let f = failure(provider_events::stripe(&fixture(
        "a_basil_invoice_payment_failed",
    )));
    assert_eq!(f.reference, "in_1SXa2YHOQNg4XnOMkV3r8c2Q");
    assert_eq!(f.invoice_id.as_deref(), Some("in_1SXa2YHOQNg4XnOMkV3r8c2Q"));
    assert_eq!(
        f.subscription_id.as_deref(),
        Some("sub_1SVC89HOQNg4XnOMoa93kOB2")
    );
    assert_eq!(
        f.who,
        Who {
            customer_id: Some("cus_TS6KX04w045BN9".into()),
            email: Some("jenny.rosen@example.com".into())
        }
    );
    assert_eq!((f.amount, f.currency.as_str()), (2990, "usd"));
    assert_eq!(f.failure_reason, "payment_failed");
    assert_eq!(f.decline_code, None);
    assert_eq!(
        f.payment_link.as_deref(),
        Some("https://invoice.stripe.com/i/acct_1SBE9vHOQNg4XnOM/test_YWNjdF8x")
    );
}

#[test]
fn stripe_invoice_failure_in_the_older_shape() {
    let f = failure(provider_events::stripe(&fixture(
        "a_acacia_invoice_payment_failed",
    )));
    assert_eq!(
        f.subscription_id.as_deref(),
        Some("sub_1Pgc6rB7WZ01zgkWNy0Cn5nw")
    );
    assert_eq!(f.who.email, None, "customer_email is null: looked up later");
    assert_eq!(f.who.customer_id.as_deref(), Some("cus_QXg1o8vcGmoR32"));
    assert_eq!((f.amount, f.currency.as_str()), (4900, "eur"));
    // The expanded payment intent carries the decline.
    assert_eq!(f.decline_code.as_deref(), Some("expired_card"));
    assert_eq!(f.failure_reason, "expired_card");
    assert_eq!(f.payment_id.as_deref(), Some("pi_3Pgc7AB7WZ01zgkW0x9y8z7w"));
}

#[test]
fn stripe_success_cancellation_signal_and_the_rest() {
    let paid = fixture("a_invoice_paid");
    assert_eq!(
        provider_events::stripe(&paid),
        Mapped::Success(Success {
            who: Who {
                customer_id: Some("cus_TS6KX04w045BN9".into()),
                email: Some("jenny.rosen@example.com".into())
            },
            invoice_id: Some("in_1SXa2YHOQNg4XnOMkV3r8c2Q".into()),
            payment_id: None,
        })
    );
    let mut succeeded = paid.clone();
    succeeded["type"] = json!("invoice.payment_succeeded");
    assert!(matches!(
        provider_events::stripe(&succeeded),
        Mapped::Success(_)
    ));
    let deleted = fixture("a_subscription_deleted");
    assert_eq!(
        provider_events::stripe(&deleted),
        Mapped::Cancellation(Cancellation {
            who: Who {
                customer_id: Some("cus_TS6KX04w045BN9".into()),
                email: None
            },
            subscription_id: Some("sub_1SVC89HOQNg4XnOMoa93kOB2".into()),
            reason_code: ReasonCode::TooExpensive,
            cancel_reason: "Switching to annual budget next quarter".into(),
            payment_failed: false,
            plan_name: None,
            mrr: None,
        })
    );
    let feedback = [
        ("too_expensive", ReasonCode::TooExpensive),
        ("missing_features", ReasonCode::MissingFeatures),
        ("unused", ReasonCode::NotUsingEnough),
        ("switched_service", ReasonCode::SwitchingCompetitor),
        ("customer_service", ReasonCode::PoorSupport),
        ("too_complex", ReasonCode::TechnicalIssues),
        ("low_quality", ReasonCode::TechnicalIssues),
        ("other", ReasonCode::Other),
    ];
    for (option, code) in feedback {
        let mut e = deleted.clone();
        e["data"]["object"]["cancellation_details"] =
            json!({"reason": "payment_failed", "feedback": option, "comment": null});
        let Mapped::Cancellation(c) = provider_events::stripe(&e) else {
            panic!()
        };
        assert_eq!(c.reason_code, code, "{option}");
        assert_eq!(c.cancel_reason, code.as_str(), "no comment: the code");
        assert!(c.payment_failed);
    }
    let expiring = CardExpiring {
        who: Who {
            customer_id: Some("cus_QXg1o8vcGmoR32".into()),
            email: None,
        },
        expiry: Some((2030, 8)),
        brand: Some("Visa".into()),
        last4: Some("4242".into()),
        created: None,
    };
    assert_eq!(
        provider_events::stripe(&fixture("a_source_expiring")),
        Mapped::CardExpiring(expiring.clone())
    );
    let mut other = paid;
    other["type"] = json!("invoice.upcoming");
    assert_eq!(provider_events::stripe(&other), Mapped::Ignored);
    assert_eq!(
        provider_events::stripe(&json!({"type": "invoice.paid"})),
        Mapped::Ignored
    );
}

#[test]
fn card_expiry_notices_become_tracked_expiring_events() {
    let now = time::parse("2026-11-21T12:00:00Z").unwrap();
    let Mapped::CardExpiring(card) = provider_events::stripe(&fixture("a_source_expiring")) else {
        panic!()
    };
    assert_eq!(
        card.tracked_event("jenny@example.com", Some("stripe:evt_1"), now),
        json!({"id": "stripe:evt_1", "event": "payment_method_expiring",
               "customer_email": "jenny@example.com", "timestamp": "2026-11-21T12:00:00.000Z",
               "properties": {"expires_at": "2030-08-31", "brand": "Visa", "last4": "4242"}})
    );
    // A legacy source keeps the expiry under `card`; December rolls into the next year; the
    // event's `created` dates it.
    let mut source = fixture("a_source_expiring");
    source["created"] = json!(1_763_640_000); // 2025-11-20T12:00:00Z
    source["data"]["object"] = json!({"id": "src_1", "object": "source", "customer": "cus_1",
        "card": {"exp_month": 12, "exp_year": 2026, "last4": "0005", "brand": "Amex"}});
    let Mapped::CardExpiring(card) = provider_events::stripe(&source) else {
        panic!()
    };
    let tracked = card.tracked_event("a@example.com", None, now);
    assert_eq!(tracked["properties"]["expires_at"], "2026-12-31");
    assert_eq!(tracked["properties"]["last4"], "0005");
    assert_eq!(tracked["timestamp"], "2025-11-20T12:00:00.000Z");
    assert!(tracked.get("id").is_none());
    // Without an expiry: the end of the month it was sent in, which is what A announces.
    source["data"]["object"] = json!({"id": "src_2", "object": "source", "customer": "cus_1"});
    source["created"] = json!(9_999_999_999_i64); // beyond what tracking accepts: now
    let Mapped::CardExpiring(card) = provider_events::stripe(&source) else {
        panic!()
    };
    let tracked = card.tracked_event("a@example.com", None, now);
    assert_eq!(tracked["properties"], json!({"expires_at": "2026-11-30"}));
    assert_eq!(tracked["timestamp"], "2026-11-21T12:00:00.000Z");
}

#[test]
fn razorpay_mappings() {
    let f = failure(provider_events::razorpay(&fixture("b_payment_failed")));
    assert_eq!(f.reference, "pay_DEAU825sJlCbGa");
    assert_eq!(f.invoice_id.as_deref(), Some("inv_EpitssSmeINDJU"));
    assert_eq!((f.amount, f.currency.as_str()), (50000, "inr"));
    assert_eq!(f.failure_reason, "payment_failed");
    assert_eq!(f.who.email.as_deref(), Some("gaurav.kumar@example.com"));
    let Mapped::Success(s) = provider_events::razorpay(&fixture("b_payment_captured")) else {
        panic!()
    };
    assert_eq!(s.payment_id.as_deref(), Some("pay_DEAU825sJlCbGa"));
    let Mapped::Success(s) = provider_events::razorpay(&fixture("b_invoice_paid")) else {
        panic!()
    };
    assert_eq!(
        (s.invoice_id.as_deref(), s.payment_id.as_deref()),
        (Some("inv_DEWHZlfIcdVIXL"), Some("pay_DEWHsM9ByjCjYS"))
    );
    assert_eq!(
        provider_events::razorpay(&fixture("b_subscription_halted")),
        Mapped::Halted(Who {
            customer_id: Some("cust_C0WlbKhp3aLA7W".into()),
            email: None
        })
    );
    let Mapped::Cancellation(c) = provider_events::razorpay(&fixture("b_subscription_cancelled"))
    else {
        panic!()
    };
    assert_eq!(c.subscription_id.as_deref(), Some("sub_DEX6xcJ1HSW4CR"));
    assert_eq!(c.who.email, None);
    assert_eq!(
        provider_events::razorpay(&json!({"event": "order.paid"})),
        Mapped::Ignored
    );
}

#[test]
fn custom_mappings() {
    let f = failure(provider_events::custom(&json!({
        "id": "evt_1", "type": "payment.failed", "customer_email": "ada@example.com",
        "amount": 1200, "currency": "EUR", "payment_id": "p_9", "decline_code": "insufficient_funds",
        "reason": "card declined at renewal", "plan_name": "Pro", "mrr": 1200})));
    assert_eq!(f.reference, "p_9");
    assert_eq!((f.amount, f.currency.as_str()), (1200, "eur"));
    assert_eq!(f.decline_code.as_deref(), Some("insufficient_funds"));
    assert_eq!((f.plan_name.as_deref(), f.mrr), (Some("Pro"), Some(1200)));
    let bare = failure(provider_events::custom(&json!({
        "id": "evt_2", "type": "payment.failed", "customer_email": "ada@example.com"})));
    assert_eq!(bare.reference, "evt_2");
    let Mapped::Cancellation(c) = provider_events::custom(&json!({
        "id": "evt_3", "type": "subscription.cancelled", "customer_email": "ada@example.com",
        "reason": "too expensive for us", "plan_name": "Pro", "mrr": 4900}))
    else {
        panic!()
    };
    assert_eq!(c.cancel_reason, "too expensive for us");
    assert_eq!(c.reason_code, ReasonCode::TooExpensive);
    assert_eq!(c.mrr, Some(4900));
    assert_eq!(
        provider_events::custom(&json!({"id": "e", "type": "refund.created"})),
        Mapped::Ignored
    );
}
