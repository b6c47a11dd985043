//! The card-update page of a failing payment (decisions §18): `GET /pay/<token>` shows the
//! amount, plan and due date with one button; `POST /pay/<token>` opens Stripe's hosted
//! Checkout (setup mode) and `GET /pay/<token>/done` is where it sends the customer back.
//! `/pay/customer/<token>` is the same page for a customer whose card expires soon (the
//! expiry notice's link), and the dunning settings frame a preview of it ([`preview`]).
//! No login: the signed token is the key. The handlers only render what
//! `Payments::{card_update_page, start_card_update, finish_card_update}` and their
//! `customer_` counterparts answer.
//!
//! Outside `/app` like the other emailed links (`links`), with the dashboard's stylesheet but
//! not its chrome: the reader is the business's customer. The page takes the cancel flow's
//! colours through one `<style>` block allowed by a per-answer nonce, and its form may be
//! sent on to Stripe's https page (`form-action` follows redirects).

use askama::Template;
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::from_fn;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use churn_core::domain::card_update::{PageAction, PageState};
use churn_core::services::{CardUpdatePage, CardUpdated, PageSubject};
use serde::Deserialize;

use super::error::{PageError, failure};
use super::layout::{Lone, html};
use super::session::InProject;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/pay/{token}", get(page).post(start))
        .route("/pay/{token}/done", get(done))
        .route(
            "/pay/customer/{token}",
            get(customer_page).post(customer_start),
        )
        .route("/pay/customer/{token}/done", get(customer_done))
        .layer(from_fn(super::security_headers))
        .layer(from_fn(super::links::no_referrer))
}

const TITLE: &str = "Update your payment method";

#[derive(Template)]
#[template(path = "dashboard/pay.html")]
struct PayPage {
    lone: Lone,
    nonce: String,
    page: CardUpdatePage,
    /// What the page is about, as terms and values.
    facts: Vec<(&'static str, String)>,
    /// How the retry after a card update went, on the return from Stripe.
    outcome: Option<CardUpdated>,
    /// Where the button posts: named, since the page is also shown at `…/done`, which takes
    /// no POST.
    form_action: String,
}

impl PayPage {
    fn failing(&self) -> bool {
        self.page.state == PageState::Failing
    }

    fn expiring(&self) -> bool {
        self.page.state == PageState::Expiring
    }

    fn actionable(&self) -> bool {
        self.page.state.actionable()
    }

    fn recovered(&self) -> bool {
        self.page.state == PageState::Recovered
    }

    fn checkout(&self) -> bool {
        self.page.action == Some(PageAction::StripeCheckout)
    }

    fn link(&self) -> Option<&str> {
        match &self.page.action {
            Some(PageAction::Link(url)) => Some(url),
            _ => None,
        }
    }

    fn declined(&self) -> bool {
        self.outcome == Some(CardUpdated::Declined)
    }

    fn pending(&self) -> bool {
        self.outcome == Some(CardUpdated::Pending)
    }

    fn saved(&self) -> bool {
        self.outcome == Some(CardUpdated::Saved)
    }
}

fn day(at: &churn_core::time::Timestamp) -> String {
    at.format("%-d %B %Y").to_string()
}

/// Who may frame the page and where its form may go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// The customer's page: never framed; the form goes on to Stripe.
    Live,
    /// The dashboard's preview: framed by the dashboard only, sandboxed, no form sent.
    Preview,
}

fn render(
    page: CardUpdatePage,
    outcome: Option<CardUpdated>,
    framing: Framing,
    form_action: String,
) -> Response {
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let (forms, ancestors, frame_options) = match framing {
        Framing::Live => ("'self' https:", "'none'", "DENY"),
        Framing::Preview => ("'none'", "'self'; sandbox", "SAMEORIGIN"),
    };
    let csp = format!(
        "default-src 'self'; script-src 'none'; style-src 'self' 'nonce-{nonce}'; img-src 'self'; \
         object-src 'none'; base-uri 'none'; form-action {forms}; frame-ancestors {ancestors}"
    );
    let facts = match &page.subject {
        PageSubject::Payment {
            plan_name,
            amount,
            due,
        } => {
            let mut facts = Vec::new();
            if let Some(plan) = plan_name {
                facts.push(("Plan", plan.clone()));
            }
            facts.push(("Amount", amount.clone()));
            facts.push(("Due", day(due)));
            facts
        }
        PageSubject::Card { card, expires_at } => {
            let mut facts = Vec::new();
            if let Some(card) = card {
                facts.push(("Card", card.clone()));
            }
            facts.push(("Expires", day(expires_at)));
            facts
        }
    };
    let mut response = html(
        StatusCode::OK,
        PayPage {
            lone: Lone::default(),
            nonce,
            page,
            facts,
            outcome,
            form_action,
        },
    );
    if let Ok(value) = HeaderValue::from_str(&csp) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, value);
        response.headers_mut().insert(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static(frame_options),
        );
    }
    response
}

/// The page as the project's customers see it, with a sample payment: the dunning
/// settings frame it (`/app/p/<slug>/payments/page-preview`).
pub async fn preview(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
) -> Result<Response, PageError> {
    let page = s.churn.payments().card_update_preview(&access).await?;
    Ok(render(page, None, Framing::Preview, String::new()))
}

/// The button's target on a record's page; the token was accepted by the service, so it is
/// the URL-safe form it issued.
fn record_form(token: &str) -> String {
    format!("/pay/{token}")
}

fn customer_form(token: &str) -> String {
    format!("/pay/customer/{token}")
}

#[derive(Deserialize)]
struct PageQuery {
    via: Option<String>,
}

async fn page(
    State(s): State<AppState>,
    Path(token): Path<String>,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Response {
    let via = query.ok().and_then(|q| q.0.via);
    let page = s
        .churn
        .payments()
        .card_update_page(&token, via.as_deref())
        .await;
    live(page.map(|page| (page, None)), record_form(&token))
}

async fn start(State(s): State<AppState>, Path(token): Path<String>) -> Response {
    onwards(s.churn.payments().start_card_update(&token).await)
}

#[derive(Default, Deserialize)]
struct DoneQuery {
    #[serde(default)]
    session_id: String,
}

async fn done(
    State(s): State<AppState>,
    Path(token): Path<String>,
    query: Result<Query<DoneQuery>, QueryRejection>,
) -> Response {
    let session = query.map(|q| q.0.session_id).unwrap_or_default();
    let finished = s
        .churn
        .payments()
        .finish_card_update(&token, &session)
        .await;
    live(finished, record_form(&token))
}

async fn customer_page(State(s): State<AppState>, Path(token): Path<String>) -> Response {
    let page = s.churn.payments().customer_card_page(&token).await;
    live(page.map(|page| (page, None)), customer_form(&token))
}

async fn customer_start(State(s): State<AppState>, Path(token): Path<String>) -> Response {
    onwards(s.churn.payments().start_customer_card_update(&token).await)
}

async fn customer_done(
    State(s): State<AppState>,
    Path(token): Path<String>,
    query: Result<Query<DoneQuery>, QueryRejection>,
) -> Response {
    let session = query.map(|q| q.0.session_id).unwrap_or_default();
    let finished = s
        .churn
        .payments()
        .finish_customer_card_update(&token, &session)
        .await;
    live(finished, customer_form(&token))
}

/// The page as the customer sees it (with how the retry went, on the return from Stripe), its
/// button posting to `form_action`; else the error page.
fn live(
    page: churn_core::Result<(CardUpdatePage, Option<CardUpdated>)>,
    form_action: String,
) -> Response {
    match page {
        Ok((page, outcome)) => render(page, outcome, Framing::Live, form_action),
        Err(e) => failure(e, Some(TITLE)),
    }
}

/// On to the provider's page that takes the card; else the error page.
fn onwards(url: churn_core::Result<String>) -> Response {
    match url {
        Ok(url) => Redirect::to(&url).into_response(),
        Err(e) => failure(e, Some(TITLE)),
    }
}
