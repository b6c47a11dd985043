//! `POST /webhooks/{provider}/{public_key}`: events from payment providers, verified over the
//! raw body (the `Bytes` extractor keeps it exactly as sent).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use churn_core::api::payments::WebhookReceived;
use churn_core::api::{Data, ErrorBody};
use churn_core::services::InboundHeaders;

use crate::error::ApiResult;
use crate::state::AppState;

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)?
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

#[utoipa::path(post, path = "/webhooks/{provider}/{public_key}", operation_id = "receive_provider_webhook", tag = "payments",
    params(
        ("provider" = churn_core::domain::provider::Provider, Path),
        ("public_key" = String, Path, description = "the project's public key"),
        ("Stripe-Signature" = Option<String>, Header, description = "stripe: t=<unix>,v1=<hex>[,v1=…]"),
        ("X-Razorpay-Signature" = Option<String>, Header, description = "razorpay: hex HMAC-SHA256 of the body"),
        ("X-Razorpay-Event-Id" = Option<String>, Header, description = "razorpay: logged only; the event id is `<event>:<entity id>:<created_at>` from the signed body"),
        ("X-Churn-Signature" = Option<String>, Header, description = "custom: hex HMAC-SHA256 of the body with the project's webhook secret"),
        ("webhook-id" = Option<String>, Header, description = "custom, Standard Webhooks form"),
        ("webhook-timestamp" = Option<String>, Header, description = "custom, Standard Webhooks form"),
        ("webhook-signature" = Option<String>, Header, description = "custom, Standard Webhooks form"),
    ),
    request_body(content = Object, content_type = "application/json", description = "the provider's event, exactly as signed"),
    responses((status = 200, body = Data<WebhookReceived>),
              (status = 400, description = "provider not connected, signature missing or wrong, no event id, a razorpay `created_at` more than 300 s from now", body = ErrorBody),
              (status = 404, description = "unknown public key or provider", body = ErrorBody),
              (status = 429, description = "RATE_LIMITED: more than 200 requests a second (burst 1,000) for this public key", body = ErrorBody),
              (status = 502, description = "the provider's customer lookup failed", body = ErrorBody)))]
pub async fn receive(
    State(s): State<AppState>,
    Path((provider, public_key)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Data<WebhookReceived>>> {
    let inbound = InboundHeaders {
        stripe_signature: header(&headers, "stripe-signature"),
        razorpay_signature: header(&headers, "x-razorpay-signature"),
        razorpay_event_id: header(&headers, "x-razorpay-event-id"),
        churn_signature: header(&headers, "x-churn-signature"),
        webhook_id: header(&headers, "webhook-id"),
        webhook_timestamp: header(&headers, "webhook-timestamp"),
        webhook_signature: header(&headers, "webhook-signature"),
    };
    Ok(Json(Data::new(
        s.churn
            .payments()
            .receive_webhook(&provider, &public_key, &inbound, &body)
            .await?,
    )))
}
