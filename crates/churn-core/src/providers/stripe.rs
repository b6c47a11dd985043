//! Stripe's API: `Authorization: Bearer <api_key>`, form-encoded
//! POST bodies ([`super::form`]) each with an `Idempotency-Key`, errors as
//! `{"error": {type, code, decline_code, advice_code, message}}` with 402 for declines.
//!
//! Dunning retries an invoice ([`Stripe::pay_invoice`]); the cancel flow creates a coupon
//! and applies it ([`Stripe::create_coupon`], [`Stripe::apply_coupon`]) or pauses
//! collection ([`Stripe::pause_collection`]), extends a trial ([`Stripe::extend_trial`]) or
//! changes the price ([`Stripe::change_price`]) after reading whose subscription it is
//! ([`Stripe::owned_subscription`]); webhooks without an email look the customer
//! up ([`Stripe::customer`]); dunning's end cancels or pauses the subscription
//! ([`Stripe::cancel_subscription`], [`Stripe::pause_collection`]); a discount email's code is made real as a one-customer
//! promotion code of a new coupon ([`Stripe::create_coupon`],
//! [`Stripe::create_promotion_code`]); the card-update page saves a new card through a
//! setup-mode Checkout Session ([`Stripe::create_setup_session`],
//! [`Stripe::checkout_session`]) and makes it the invoices' default
//! ([`Stripe::set_default_payment_method`]).

use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{CALL_TIMEOUT, CallError, Customer, endpoint, form};
use crate::outbound::Http;
use crate::time::Timestamp;

pub const DEFAULT_API_BASE: &str = "https://api.stripe.com";

/// A client for one connection: its base URL and secret key.
#[derive(Clone)]
pub struct Stripe {
    http: Http,
    api_base: String,
    api_key: SecretString,
}

impl std::fmt::Debug for Stripe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stripe")
            .field("api_base", &self.api_base)
            .finish_non_exhaustive()
    }
}

/// What a pay call ended in, short of an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayOutcome {
    /// 200 with `status: paid`.
    Paid,
    /// 400 "Invoice is already paid": as good as paid.
    AlreadyPaid,
    /// 200 with another status (e.g. `open` while a payment needs action); nothing was
    /// collected.
    NotPaid { status: String },
}

/// An invoice as the pay call answers it (only what churn reads).
#[derive(Debug, Clone, Deserialize)]
pub struct Invoice {
    pub id: String,
    #[serde(default)]
    pub status: Option<String>,
}

/// A coupon as the create call answers it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Coupon {
    pub id: String,
}

/// A promotion code as the create call answers it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PromotionCode {
    pub id: String,
    pub code: String,
}

/// A subscription as the update call answers it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Subscription {
    pub id: String,
    #[serde(default)]
    pub status: Option<String>,
}

/// A Checkout Session as churn reads it: its hosted page, its customer and, once completed
/// in `setup` mode, the setup intent (expanded) holding the new payment method.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckoutSession {
    pub id: String,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub customer: Option<String>,
    #[serde(default)]
    pub setup_intent: Option<SetupIntent>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SetupIntent {
    pub id: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub payment_method: Option<String>,
}

/// Where a setup-mode Checkout Session sends the customer back.
#[derive(Debug, Clone, Copy)]
pub struct SetupReturn<'a> {
    pub success_url: &'a str,
    pub cancel_url: &'a str,
}

/// The coupon of a discount offer: `percent_off` for `duration_in_months` months
/// (`duration=repeating`).
#[derive(Debug, Clone, PartialEq)]
pub struct NewCoupon {
    pub percent_off: u32,
    pub duration_in_months: u32,
    pub name: Option<String>,
    /// Written as `metadata[key]=value`.
    pub metadata: Vec<(String, String)>,
}

/// A subscription as an offer reads it before changing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedSubscription {
    /// The customer's email; `None` when the customer has none.
    pub owner_email: Option<String>,
    /// When its trial ends; `None` without a trial.
    pub trial_end: Option<Timestamp>,
    /// Its first item (`items.data[0].id`), whose price a plan change replaces.
    pub first_item: Option<String>,
}

/// What `pause_collection[behavior]` does with invoices made while paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseBehavior {
    KeepAsDraft,
    MarkUncollectible,
    Void,
}

impl PauseBehavior {
    fn as_str(self) -> &'static str {
        match self {
            PauseBehavior::KeepAsDraft => "keep_as_draft",
            PauseBehavior::MarkUncollectible => "mark_uncollectible",
            PauseBehavior::Void => "void",
        }
    }
}

impl Stripe {
    /// `http` must be the tenant client: `api_base` is tenant-given.
    pub fn new(http: Http, api_base: &str, api_key: SecretString) -> Self {
        Self {
            http,
            api_base: api_base.trim_end_matches('/').to_owned(),
            api_key,
        }
    }

    /// `POST /v1/invoices/{id}/pay`. Give each attempt its own key: the provider replays the
    /// first answer (a 402 included) to a repeated key.
    pub async fn pay_invoice(
        &self,
        invoice_id: &str,
        idempotency_key: &str,
    ) -> Result<PayOutcome, CallError> {
        let answer: Result<Invoice, _> = self
            .post(
                &["v1", "invoices", invoice_id, "pay"],
                &json!({}),
                idempotency_key,
            )
            .await;
        match answer {
            Ok(invoice) => match invoice.status.as_deref() {
                Some("paid") => Ok(PayOutcome::Paid),
                other => Ok(PayOutcome::NotPaid {
                    status: other.unwrap_or_default().to_owned(),
                }),
            },
            Err(CallError::Refused { status: 400, error })
                if error
                    .message
                    .as_deref()
                    .is_some_and(|m| m.to_ascii_lowercase().contains("already paid")) =>
            {
                Ok(PayOutcome::AlreadyPaid)
            }
            Err(e) => Err(e),
        }
    }

    /// `POST /v1/coupons` with `percent_off`, `duration=repeating`, `duration_in_months`.
    pub async fn create_coupon(
        &self,
        coupon: &NewCoupon,
        idempotency_key: &str,
    ) -> Result<Coupon, CallError> {
        let mut params = json!({
            "percent_off": coupon.percent_off,
            "duration": "repeating",
            "duration_in_months": coupon.duration_in_months,
        });
        if let Some(name) = &coupon.name {
            params["name"] = json!(name);
        }
        if !coupon.metadata.is_empty() {
            let metadata: serde_json::Map<String, Value> = coupon
                .metadata
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            params["metadata"] = Value::Object(metadata);
        }
        self.post(&["v1", "coupons"], &params, idempotency_key)
            .await
    }

    /// `POST /v1/promotion_codes` with `coupon`, `code`, `customer` when known and
    /// `max_redemptions=1`: a code of `coupon` that one customer can redeem once.
    pub async fn create_promotion_code(
        &self,
        coupon_id: &str,
        code: &str,
        customer_id: Option<&str>,
        idempotency_key: &str,
    ) -> Result<PromotionCode, CallError> {
        let mut params = json!({"coupon": coupon_id, "code": code, "max_redemptions": 1});
        if let Some(customer) = customer_id {
            params["customer"] = json!(customer);
        }
        self.post(&["v1", "promotion_codes"], &params, idempotency_key)
            .await
    }

    /// `POST /v1/subscriptions/{id}` with `discounts[0][coupon]`. A populated `discounts`
    /// replaces the subscription's discounts (the legacy `coupon` parameter is gone since
    /// the 2025-03-31 API version).
    pub async fn apply_coupon(
        &self,
        subscription_id: &str,
        coupon_id: &str,
        idempotency_key: &str,
    ) -> Result<Subscription, CallError> {
        self.update_subscription(
            subscription_id,
            &json!({"discounts": [{"coupon": coupon_id}]}),
            idempotency_key,
        )
        .await
    }

    /// `POST /v1/subscriptions/{id}` with `pause_collection[behavior]` and, for a pause that
    /// ends by itself, `pause_collection[resumes_at]` (unix seconds).
    pub async fn pause_collection(
        &self,
        subscription_id: &str,
        behavior: PauseBehavior,
        resumes_at: Option<Timestamp>,
        idempotency_key: &str,
    ) -> Result<Subscription, CallError> {
        let mut pause = json!({"behavior": behavior.as_str()});
        if let Some(at) = resumes_at {
            pause["resumes_at"] = json!(at.timestamp());
        }
        self.update_subscription(
            subscription_id,
            &json!({ "pause_collection": pause }),
            idempotency_key,
        )
        .await
    }

    /// `DELETE /v1/subscriptions/{id}`: cancels at once. Stripe takes no idempotency key on
    /// a DELETE, which is idempotent itself.
    pub async fn cancel_subscription(
        &self,
        subscription_id: &str,
    ) -> Result<Subscription, CallError> {
        self.without_body(
            Method::DELETE,
            &["v1", "subscriptions", subscription_id],
            &[],
        )
        .await
    }

    /// `POST /v1/subscriptions/{id}` with any parameters (encoded by [`form::encode`]).
    pub async fn update_subscription(
        &self,
        subscription_id: &str,
        params: &Value,
        idempotency_key: &str,
    ) -> Result<Subscription, CallError> {
        self.post(
            &["v1", "subscriptions", subscription_id],
            params,
            idempotency_key,
        )
        .await
    }

    /// `POST /v1/checkout/sessions` with `mode=setup`, `customer`, `currency` (required in
    /// setup mode when `payment_method_types` is not set, so Stripe offers the methods that
    /// can pay in it), `success_url` and `cancel_url`: a hosted page where the customer saves
    /// a new payment method.
    pub async fn create_setup_session(
        &self,
        customer_id: &str,
        currency: &str,
        back: SetupReturn<'_>,
        idempotency_key: &str,
    ) -> Result<CheckoutSession, CallError> {
        self.post(
            &["v1", "checkout", "sessions"],
            &json!({
                "mode": "setup",
                "customer": customer_id,
                "currency": currency,
                "success_url": back.success_url,
                "cancel_url": back.cancel_url,
            }),
            idempotency_key,
        )
        .await
    }

    /// `GET /v1/checkout/sessions/{id}` with `expand[]=setup_intent`.
    pub async fn checkout_session(&self, session_id: &str) -> Result<CheckoutSession, CallError> {
        self.get(
            &["v1", "checkout", "sessions", session_id],
            &[("expand[]", "setup_intent")],
        )
        .await
    }

    /// `POST /v1/customers/{id}` with `invoice_settings[default_payment_method]`: the method
    /// the customer's invoices are paid with from now on.
    pub async fn set_default_payment_method(
        &self,
        customer_id: &str,
        payment_method: &str,
        idempotency_key: &str,
    ) -> Result<Customer, CallError> {
        self.post(
            &["v1", "customers", customer_id],
            &json!({"invoice_settings": {"default_payment_method": payment_method}}),
            idempotency_key,
        )
        .await
    }

    /// `GET /v1/customers/{id}`, for events that carry no email.
    pub async fn customer(&self, customer_id: &str) -> Result<Customer, CallError> {
        self.get(&["v1", "customers", customer_id], &[]).await
    }

    /// A subscription with its customer expanded (`GET /v1/subscriptions/{id}` with
    /// `expand[]=customer`): whose it is, so an offer is applied only to the signed customer's
    /// own subscription (decisions §16), and what an offer changes (its trial end, its items).
    pub async fn owned_subscription(
        &self,
        subscription_id: &str,
    ) -> Result<OwnedSubscription, CallError> {
        #[derive(Deserialize)]
        struct Owned {
            customer: Customer,
            #[serde(default)]
            trial_end: Option<i64>,
            #[serde(default)]
            items: Option<Items>,
        }
        #[derive(Deserialize)]
        struct Items {
            #[serde(default)]
            data: Vec<Item>,
        }
        #[derive(Deserialize)]
        struct Item {
            id: String,
        }
        let owned: Owned = self
            .get(
                &["v1", "subscriptions", subscription_id],
                &[("expand[]", "customer")],
            )
            .await?;
        Ok(OwnedSubscription {
            owner_email: owned.customer.email,
            trial_end: owned
                .trial_end
                .and_then(|t| chrono::DateTime::from_timestamp(t, 0)),
            first_item: owned
                .items
                .and_then(|items| items.data.into_iter().next())
                .map(|item| item.id),
        })
    }

    /// `POST /v1/subscriptions/{id}` with `trial_end` (unix seconds) and
    /// `proration_behavior=none`: the trial ends then, and nothing is prorated for it.
    pub async fn extend_trial(
        &self,
        subscription_id: &str,
        trial_end: Timestamp,
        idempotency_key: &str,
    ) -> Result<Subscription, CallError> {
        self.update_subscription(
            subscription_id,
            &json!({"trial_end": trial_end.timestamp(), "proration_behavior": "none"}),
            idempotency_key,
        )
        .await
    }

    /// `POST /v1/subscriptions/{id}` with `items[0][id]` and `items[0][price]`: the item's
    /// price replaced by `price_id`.
    pub async fn change_price(
        &self,
        subscription_id: &str,
        item_id: &str,
        price_id: &str,
        idempotency_key: &str,
    ) -> Result<Subscription, CallError> {
        self.update_subscription(
            subscription_id,
            &json!({"items": [{"id": item_id, "price": price_id}]}),
            idempotency_key,
        )
        .await
    }

    async fn get<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        query: &[(&str, &str)],
    ) -> Result<T, CallError> {
        self.without_body(Method::GET, segments, query).await
    }

    /// A GET or DELETE: parameters in the query, none in a body.
    async fn without_body<T: DeserializeOwned>(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, &str)],
    ) -> Result<T, CallError> {
        let mut url = endpoint(&self.api_base, segments)?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let response = self
            .http
            .request(method, url.as_str())
            .bearer_auth(self.api_key.expose_secret())
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(CallError::from_outbound)?;
        response
            .json()
            .map_err(|e| CallError::Unavailable(e.to_string()))
    }

    async fn post<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        params: &Value,
        idempotency_key: &str,
    ) -> Result<T, CallError> {
        let url = endpoint(&self.api_base, segments)?;
        let response = self
            .http
            .request(Method::POST, url.as_str())
            .bearer_auth(self.api_key.expose_secret())
            .header("Idempotency-Key", idempotency_key)
            .form(&form::encode(params))
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(CallError::from_outbound)?;
        response
            .json()
            .map_err(|e| CallError::Unavailable(e.to_string()))
    }
}
