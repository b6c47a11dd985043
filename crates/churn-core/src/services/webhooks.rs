//! Outcome webhooks (decisions §19): endpoints (URL rules as §9's alert URL, checked at save
//! and again by the tenant client at every delivery; secrets sealed), messages emitted in the
//! transaction of the change they report, and what an attempt sends. They are delivered by
//! the one mechanism of churn-risk alerts (`delivery`): the same POST, attempt log, job per
//! attempt and redelivery, on the endpoint schedule stated beside the alert's.
//!
//! - A message is one row per subscribed endpoint plus its first `deliver_webhook` job, both
//!   written with the change: a crash before the commit loses both, after it neither.
//! - An endpoint fails since its first failed attempt after its last success; a failure five
//!   days after that disables it and enqueues one email per owner and admin.

use super::access::ProjectAccess;
use super::delivery::{Delivery, Step};
use super::paging::Page;
use super::{Alerts, Local};
use crate::api::Meta;
use crate::api::alerts::AlertStatus;
use crate::api::webhooks::{
    CreatedWebhookEndpoint, DeliveryQuery, NewWebhookEndpoint, WebhookDelivery, WebhookEndpoint,
    WebhookEndpointPatch,
};
use crate::domain::keys::generate_webhook_secret;
use crate::domain::role::{Permission, Role};
use crate::domain::validation::{Validator, optional_text};
use crate::domain::webhook_secrets::WebhookSecrets;
use crate::domain::webhooks::{
    EventType, Format, MESSAGE_PREFIX, Message, TEST_EVENT, disables, event_types, slack_summary,
};
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::jobs::JobRun;
use crate::jobs::kind::Job;
use crate::store::sealed::ENDPOINT_SECRETS;
use crate::store::webhooks::{self as store, DeliveryRow, EndpointRecord};
use crate::store::{Tx, projects, team};
use crate::time::{self, Timestamp};

const MAX_DESCRIPTION: usize = 500;
/// Why churn disabled an endpoint.
const FAILING: &str = "failing_for_5_days";

/// Emits a message of `event` about each of `items` to the project's enabled endpoints that
/// subscribe to it, in the caller's transaction (the change's own): a delivery row and its
/// first job per message and endpoint. The endpoints are read once for all the items.
pub(crate) async fn emit(
    tx: &mut Tx,
    project_id: &str,
    event: EventType,
    items: Vec<serde_json::Value>,
    now: Timestamp,
) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let endpoints: Vec<EndpointRecord> = store::enabled_endpoints(&mut **tx, project_id)
        .await?
        .into_iter()
        .filter(|e| subscribes(e, event))
        .collect();
    if endpoints.is_empty() {
        return Ok(());
    }
    for data in &items {
        enqueue_message(tx, project_id, &endpoints, event.as_str(), data, now).await?;
    }
    Ok(())
}

/// Emits `event` about one object.
pub(crate) async fn emit_one(
    tx: &mut Tx,
    project_id: &str,
    event: EventType,
    data: impl serde::Serialize,
    now: Timestamp,
) -> Result<()> {
    let data = serde_json::to_value(data).map_err(Error::internal)?;
    emit(tx, project_id, event, vec![data], now).await
}

/// Emits `event` about the churn events `ids` as they now stand in `tx`.
pub(crate) async fn emit_churn_events(
    tx: &mut Tx,
    project_id: &str,
    event: EventType,
    ids: &[String],
    now: Timestamp,
) -> Result<()> {
    let mut items = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(record) = crate::store::events::get(&mut **tx, project_id, id).await? {
            let view = super::events::event_view(record, None);
            items.push(serde_json::to_value(view).map_err(Error::internal)?);
        }
    }
    emit(tx, project_id, event, items, now).await
}

/// Emits `event` about the variant `id` as it now stands in `tx`, with its customer's email.
pub(crate) async fn emit_variant(
    tx: &mut Tx,
    event: EventType,
    id: &str,
    now: Timestamp,
) -> Result<()> {
    let Some(record) = crate::store::variants::by_id(&mut **tx, id).await? else {
        return Ok(());
    };
    let project_id = record.project_id.clone();
    let customer_email = record.recipient.clone();
    let mut data =
        serde_json::to_value(super::events::variant_view(record)).map_err(Error::internal)?;
    if let Some(object) = data.as_object_mut() {
        object.insert("customer_email".into(), customer_email.into());
    }
    emit(tx, &project_id, event, vec![data], now).await
}

fn subscribes(endpoint: &EndpointRecord, event: EventType) -> bool {
    serde_json::from_str::<Vec<String>>(&endpoint.event_types)
        .is_ok_and(|types| types.iter().any(|t| t == event.as_str()))
}

/// One message to each of `endpoints`, due now; answers the delivery ids.
async fn enqueue_message(
    tx: &mut Tx,
    project_id: &str,
    endpoints: &[EndpointRecord],
    event_type: &str,
    data: &serde_json::Value,
    now: Timestamp,
) -> Result<Vec<String>> {
    let message_id = format!("{MESSAGE_PREFIX}{}", new_id().replace('-', ""));
    let body = serde_json::to_string(&Message {
        event_type,
        id: &message_id,
        created_at: now,
        project_id,
        data,
    })
    .map_err(Error::internal)?;
    let due = time::format(&now);
    let mut jobs = Vec::with_capacity(endpoints.len());
    let mut ids = Vec::with_capacity(endpoints.len());
    for endpoint in endpoints {
        let row = DeliveryRow {
            id: new_id(),
            project_id: project_id.to_owned(),
            endpoint_id: endpoint.id.clone(),
            message_id: message_id.clone(),
            event_type: event_type.to_owned(),
            body: body.clone(),
            status: AlertStatus::Pending.as_str().to_owned(),
            reason: None,
            attempts: "[]".to_owned(),
            next_attempt_at: Some(due.clone()),
            created_at: due.clone(),
        };
        store::insert_delivery(&mut **tx, &row).await?;
        jobs.push((Delivery::Endpoint(&row.id).job(1, now), now));
        ids.push(row.id);
    }
    Job::enqueue_all(tx, &jobs, now).await?;
    Ok(ids)
}

fn endpoint_view(r: &EndpointRecord) -> Result<WebhookEndpoint> {
    let corrupt = |what: &str| Error::internal(format!("corrupt {what} in webhook_endpoints"));
    let names: Vec<String> =
        serde_json::from_str(&r.event_types).map_err(|_| corrupt("event_types"))?;
    Ok(WebhookEndpoint {
        id: r.id.clone(),
        url: r.url.clone(),
        description: r.description.clone(),
        event_types: event_types(&names).map_err(|_| corrupt("event_types"))?,
        enabled: r.enabled,
        format: Format::parse(&r.format).ok_or_else(|| corrupt("format"))?,
        disabled_reason: r.disabled_reason.clone(),
        failing_since: r.failing_since,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

fn delivery_view(r: DeliveryRow) -> Result<WebhookDelivery> {
    let corrupt = |what: &str| Error::internal(format!("corrupt {what} in webhook_deliveries"));
    Ok(WebhookDelivery {
        status: AlertStatus::parse(&r.status).ok_or_else(|| corrupt("status"))?,
        attempts: serde_json::from_str(&r.attempts).map_err(|_| corrupt("attempts"))?,
        next_attempt_at: r
            .next_attempt_at
            .as_deref()
            .map(|t| time::parse(t).ok_or_else(|| corrupt("next_attempt_at")))
            .transpose()?,
        created_at: time::parse(&r.created_at).ok_or_else(|| corrupt("created_at"))?,
        id: r.id,
        endpoint_id: r.endpoint_id,
        message_id: r.message_id,
        event_type: r.event_type,
        reason: r.reason,
    })
}

fn endpoint_not_found() -> Error {
    Error::NotFound("webhook endpoint not found".into())
}

fn types_json(types: &[EventType]) -> String {
    serde_json::Value::from(types.iter().map(|t| t.as_str()).collect::<Vec<_>>()).to_string()
}

impl Alerts {
    /// `POST /projects/:slug/webhook-endpoints`: the answer holds the secret, this once.
    pub async fn create_endpoint(
        &self,
        access: &ProjectAccess,
        new: NewWebhookEndpoint,
    ) -> Result<CreatedWebhookEndpoint> {
        access.authorize(Permission::Administer)?;
        let mut v = Validator::new();
        let url = self.check_url(&mut v, "url", &new.url).await;
        let description = v.check(
            "description",
            optional_text(&new.description, MAX_DESCRIPTION),
        );
        let types = v.check("event_types", event_types(&new.event_types));
        v.finish()?;
        let (Some(url), Some(description), Some(types)) = (url, description, types) else {
            return Err(Error::internal("validation passed without values"));
        };
        let now = self.core.now();
        let id = new_id();
        let secret = generate_webhook_secret();
        let key = self.core.encryption_key.bytes();
        let record = EndpointRecord {
            project_id: access.project.id.clone(),
            url,
            description,
            event_types: types_json(&types),
            enabled: new.enabled,
            format: new.format.as_str().to_owned(),
            secret: ENDPOINT_SECRETS.seal(key, &[&id], secret.as_bytes())?,
            failing_since: None,
            disabled_reason: None,
            created_at: now,
            updated_at: now,
            id,
        };
        store::insert_endpoint(self.core.store.writer(), &record).await?;
        Ok(CreatedWebhookEndpoint {
            endpoint: endpoint_view(&record)?,
            secret,
        })
    }

    /// `PATCH /projects/:slug/webhook-endpoints/:id`: changes the fields given. Enabling an
    /// endpoint clears its failure record.
    pub async fn update_endpoint(
        &self,
        access: &ProjectAccess,
        id: &str,
        patch: WebhookEndpointPatch,
    ) -> Result<WebhookEndpoint> {
        access.authorize(Permission::Administer)?;
        let project_id = &access.project.id;
        let mut record = store::endpoint(self.core.store.reader(), project_id, id)
            .await?
            .ok_or_else(endpoint_not_found)?;
        let mut v = Validator::new();
        if let Some(url) = &patch.url
            && let Some(url) = self.check_url(&mut v, "url", url).await
        {
            record.url = url;
        }
        if let Some(description) = &patch.description
            && let Some(d) = v.check("description", optional_text(description, MAX_DESCRIPTION))
        {
            record.description = d;
        }
        if let Some(names) = &patch.event_types
            && let Some(types) = v.check("event_types", event_types(names))
        {
            record.event_types = types_json(&types);
        }
        v.finish()?;
        if let Some(format) = patch.format {
            record.format = format.as_str().to_owned();
        }
        if let Some(enabled) = patch.enabled {
            if enabled && !record.enabled {
                record.failing_since = None;
            }
            record.disabled_reason = None;
            record.enabled = enabled;
        }
        record.updated_at = self.core.now();
        if !store::update_endpoint(self.core.store.writer(), &record).await? {
            return Err(endpoint_not_found());
        }
        endpoint_view(&record)
    }

    /// `DELETE /projects/:slug/webhook-endpoints/:id`: with its delivery log.
    pub async fn delete_endpoint(&self, access: &ProjectAccess, id: &str) -> Result<()> {
        access.authorize(Permission::Administer)?;
        if !store::delete_endpoint(self.core.store.writer(), &access.project.id, id).await? {
            return Err(endpoint_not_found());
        }
        Ok(())
    }

    /// `POST /projects/:slug/webhook-endpoints/:id/test`: a `webhook.test` message to this
    /// endpoint alone, whatever it subscribes to (and even disabled), delivered as any other.
    pub async fn test_endpoint(&self, access: &ProjectAccess, id: &str) -> Result<WebhookDelivery> {
        access.authorize(Permission::Administer)?;
        let project_id = &access.project.id;
        let now = self.core.now();
        let mut tx = self.core.store.begin().await?;
        let endpoint = store::endpoint(&mut *tx, project_id, id)
            .await?
            .ok_or_else(endpoint_not_found)?;
        let data = serde_json::json!({"endpoint_id": endpoint.id});
        let ids = enqueue_message(&mut tx, project_id, &[endpoint], TEST_EVENT, &data, now).await?;
        tx.commit().await?;
        let delivery_id = ids
            .first()
            .ok_or_else(|| Error::internal("a test message without its delivery"))?;
        let row = store::delivery(self.core.store.reader(), project_id, id, delivery_id)
            .await?
            .ok_or_else(|| Error::internal("a test delivery vanished"))?;
        delivery_view(row)
    }

    /// `POST …/webhook-endpoints/:id/deliveries/:did/redeliver`: as any delivery
    /// ([`Local::restart_delivery`]): the same message id, its attempts appended to the same
    /// log entry; 409 while it is pending unless stuck.
    pub async fn redeliver(
        &self,
        access: &ProjectAccess,
        endpoint_id: &str,
        id: &str,
    ) -> Result<WebhookDelivery> {
        access.authorize(Permission::Administer)?;
        let project_id = &access.project.id;
        let db = self.core.store.reader();
        let seen = store::delivery(db, project_id, endpoint_id, id)
            .await?
            .ok_or_else(|| Error::NotFound("delivery not found".into()))?;
        self.core
            .restart_delivery(Delivery::Endpoint(id), project_id, &seen.round()?)
            .await?;
        let row = store::delivery(db, project_id, endpoint_id, id)
            .await?
            .ok_or_else(|| Error::NotFound("delivery not found".into()))?;
        delivery_view(row)
    }
}

impl Local {
    /// `GET /projects/:slug/webhook-endpoints`: oldest first.
    pub async fn list_endpoints(&self, access: &ProjectAccess) -> Result<Vec<WebhookEndpoint>> {
        access.authorize(Permission::Read)?;
        store::endpoints(self.store.reader(), &access.project.id)
            .await?
            .iter()
            .map(endpoint_view)
            .collect()
    }

    /// `GET /projects/:slug/webhook-endpoints/:id`.
    pub async fn get_endpoint(&self, access: &ProjectAccess, id: &str) -> Result<WebhookEndpoint> {
        access.authorize(Permission::Read)?;
        let record = store::endpoint(self.store.reader(), &access.project.id, id)
            .await?
            .ok_or_else(endpoint_not_found)?;
        endpoint_view(&record)
    }

    /// `GET /projects/:slug/webhook-endpoints/:id/deliveries`: newest first.
    pub async fn list_deliveries(
        &self,
        access: &ProjectAccess,
        endpoint_id: &str,
        q: DeliveryQuery,
    ) -> Result<(Vec<WebhookDelivery>, Meta)> {
        access.authorize(Permission::Read)?;
        let page = Page::parse(q.page, q.per_page)?;
        let db = self.store.reader();
        let project_id = &access.project.id;
        store::endpoint(db, project_id, endpoint_id)
            .await?
            .ok_or_else(endpoint_not_found)?;
        let total = store::count_deliveries(db, project_id, endpoint_id).await?;
        let items = store::deliveries(db, project_id, endpoint_id, page.per_page, page.offset())
            .await?
            .into_iter()
            .map(delivery_view)
            .collect::<Result<_>>()?;
        Ok((items, page.meta(u64::try_from(total).unwrap_or(0))))
    }
}

impl Alerts {
    /// An attempt of a message to `endpoint`: the standard body signed under the endpoint's
    /// secret, or the Slack summary; skipped when the endpoint was disabled meanwhile (a test
    /// message goes anyway).
    pub(super) async fn endpoint_attempt(
        &self,
        message: &DeliveryRow,
        endpoint: &EndpointRecord,
    ) -> Result<Step> {
        if !endpoint.enabled && message.event_type != TEST_EVENT {
            return Ok(Step::Skipped("endpoint_disabled"));
        }
        match Format::parse(&endpoint.format) {
            Some(Format::Slack) => {
                let Some(project) =
                    projects::by_id(self.core.store.reader(), &message.project_id).await?
                else {
                    return Ok(Step::Nothing);
                };
                let body: serde_json::Value =
                    serde_json::from_str(&message.body).map_err(Error::internal)?;
                let text = slack_summary(&message.event_type, &project.name, &body["data"]);
                let summary = serde_json::to_vec(&serde_json::json!({ "text": text }))
                    .map_err(Error::internal)?;
                self.post("outcome_webhook", &endpoint.url, summary, None)
                    .await
            }
            Some(Format::Standard) => {
                let secret = String::from_utf8(ENDPOINT_SECRETS.open(
                    self.core.encryption_key.bytes(),
                    &[&endpoint.id],
                    &endpoint.secret,
                )?)
                .map_err(Error::internal)?;
                let secrets = WebhookSecrets::new(secret, None, self.core.now());
                let body = message.body.clone().into_bytes();
                self.post(
                    "outcome_webhook",
                    &endpoint.url,
                    body,
                    Some((&secrets, &message.message_id)),
                )
                .await
            }
            None => Err(Error::internal("corrupt format in webhook_endpoints")),
        }
    }

    /// Job `endpoint_disabled_notice`: tells an owner or admin that an endpoint was disabled.
    pub(crate) async fn send_endpoint_disabled_notice(
        &self,
        endpoint_id: &str,
        to: &str,
        run: &JobRun,
    ) -> Result<()> {
        let db = self.core.store.reader();
        let Some(project_id) = store::project_of_endpoint(db, endpoint_id).await? else {
            return Ok(());
        };
        let (Some(endpoint), Some(project)) = (
            store::endpoint(db, &project_id, endpoint_id).await?,
            projects::by_id(db, &project_id).await?,
        ) else {
            return Ok(());
        };
        let mailer = &self.sending.mailer;
        let link = format!(
            "{}/api/v1/projects/{}/webhook-endpoints/{}/deliveries",
            mailer.public_url, project.slug, endpoint.id
        );
        let subject = format!("[{}] Webhook endpoint disabled", project.name);
        let text = format!(
            "Every delivery to the webhook endpoint {} of {} has failed for 5 days, so churn \
             disabled it and sends it nothing more.\n\nIts delivery log: {link}\n\nOnce the \
             receiver works again, enable the endpoint (PATCH with \"enabled\": true) and \
             redeliver the messages it missed.",
            endpoint.url, project.name
        );
        let message = mailer.service_email(to.to_owned(), None, subject, text);
        super::send_job_email(&self.core, run, mailer, &message, ENDPOINT_DISABLED_NOTICE).await
    }
}

/// The notice to owners and admins that churn disabled a failing endpoint.
const ENDPOINT_DISABLED_NOTICE: super::JobEmail = super::JobEmail {
    kind: "endpoint_disabled",
    what: "an endpoint-disabled notice",
    failed: "the email server did not accept the endpoint-disabled notice",
};

/// Keeps the endpoint's failure record after an attempt at `at`, in the transaction that
/// records it: a success clears it; a failure five days after the first one since the last
/// success disables the endpoint. Answers the emails to its owners and admins that a
/// disabling calls for.
pub(super) async fn keep_failure_record(
    tx: &mut Tx,
    endpoint: &EndpointRecord,
    at: Timestamp,
    succeeded: bool,
    now: Timestamp,
) -> Result<Vec<(Job, Timestamp)>> {
    let mut notices = Vec::new();
    if succeeded {
        store::succeeded(&mut **tx, &endpoint.id).await?;
    } else if let Some(since) = store::failed(&mut **tx, &endpoint.id, at).await?
        && disables(since, at)
        && store::disable(&mut **tx, &endpoint.id, FAILING, now).await?
    {
        tracing::warn!(endpoint = %endpoint.id, "a webhook endpoint failing for 5 days was disabled");
        for member in team::members(&mut **tx, &endpoint.project_id).await? {
            if matches!(member.role, Role::Owner | Role::Admin) {
                notices.push((
                    Job::EndpointDisabledNotice {
                        endpoint_id: endpoint.id.clone(),
                        to: member.email,
                    },
                    now,
                ));
            }
        }
    }
    Ok(notices)
}
