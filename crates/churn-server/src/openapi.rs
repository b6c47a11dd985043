//! The OpenAPI document. Paths come from the handlers' annotations as routes are registered,
//! so the document covers exactly the routes that exist; [`complete`] then adds the answers
//! every route can give because of the layers around it (authentication, the JSON and query
//! extractors, the body limit, the rate limiter), in the error shape of the route's form.

use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{AdditionalProperties, Schema};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, ObjectBuilder, OneOfBuilder, Ref, RefOr, Required};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(title = "churn", description = "Churn recovery service API. Paths under /api/v1 are the versioned API. \
        Errors use the body `{\"error\": {\"code\", \"message\", \"details\"}}`, except on the unscoped \
        `/api/v1/churn-events` routes, which answer `{\"error\", \"code\"}`. Every answer carries `X-Request-Id` \
        and the `X-RateLimit-*` headers."),
    modifiers(&Security),
    tags(
        (name = "auth", description = "Accounts and sessions"),
        (name = "projects", description = "Projects, keys and settings"),
        (name = "churn events", description = "Churn events and recovery emails, project-scoped"),
        (name = "churn events (unscoped)", description = "The older unscoped form of the churn event routes"),
        (name = "statistics", description = "Recovery statistics"),
        (name = "payments", description = "Payment providers, their webhooks, payment failures and dunning"),
        (name = "team", description = "Invitations and members of a project"),
        (name = "cancel flow", description = "The cancel-flow widget: its configuration, and its calls by public key"),
        (name = "tracking", description = "Open pixel and click redirects of sent emails"),
        (name = "behavior", description = "Tracked behaviour events, customers and event analytics"),
        (name = "churn risk", description = "Churn-risk scores of customers"),
        (name = "webhooks", description = "Outcome webhook endpoints, signed with Standard Webhooks, and their delivery log"),
        (name = "operations", description = "Health, readiness and metrics"),
        (name = "dev", description = "Test clock and jobs (dev mode only)"),
    )
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        );
    }
}

/// Where the unscoped routes, with their older error body, live.
const UNSCOPED: &str = "/api/v1/churn-events";

/// The URI guard's answer, on any route whose target (path and query) is too long.
const URI_TOO_LONG: (&str, &str) = (
    "414",
    "URI_TOO_LONG: the request target is longer than 8192 bytes",
);

/// Finishes the collected document: common error answers on every operation, and the two
/// forms of `GET /stats`.
pub fn complete(doc: &mut utoipa::openapi::OpenApi) {
    for (path, item) in doc.paths.paths.iter_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for op in operations.into_iter().flatten() {
            add_common_responses(path, op);
            optional_body_not_null(op);
        }
        // Preflights pass the URI guard too.
        if let Some(op) = item.options.as_mut() {
            let (status, description) = URI_TOO_LONG;
            op.responses
                .responses
                .entry(status.to_owned())
                .or_insert_with(|| RefOr::T(error_response(description, false)));
        }
    }
    stats_forms(doc);
}

fn add_common_responses(path: &str, op: &mut Operation) {
    let unscoped = path == UNSCOPED || path.starts_with(&format!("{UNSCOPED}/"));
    let events = unscoped || path.contains("/churn-events");
    let secured = op.security.as_ref().is_some_and(|s| !s.is_empty());
    let params = op.parameters.as_deref().unwrap_or_default();
    let has_query = params.iter().any(|p| p.parameter_in == ParameterIn::Query);
    let has_path = path.contains('{');
    let has_body = op.request_body.is_some();
    let api = path.starts_with("/api/v1/");
    let mut common: Vec<(&str, &str)> = Vec::new();
    if has_body || (has_query && api) {
        common.push((
            "400",
            "VALIDATION_ERROR: a malformed body or parameter, or a rule of the operation refused",
        ));
    }
    if secured {
        common.push((
            "401",
            "UNAUTHORIZED: missing, invalid, expired or revoked credentials",
        ));
    }
    if events {
        common.push((
            "402",
            "SUBSCRIPTION_EXPIRED: the project owner's subscription has expired",
        ));
    }
    if path.contains("{slug}") || unscoped {
        common.push((
            "403",
            "FORBIDDEN: the caller's role lacks the permission, or the API key belongs to another project",
        ));
    }
    if path.contains("{slug}") {
        common.push((
            "409",
            "CONFLICT: several projects the caller belongs to use this slug; use the project id",
        ));
    }
    if has_path || unscoped {
        common.push((
            "404",
            "NOT_FOUND: no such object, or it belongs to another tenant",
        ));
    }
    if has_body {
        common.push(("413", "PAYLOAD_TOO_LARGE: the body is over 1 MiB"));
        common.push((
            "415",
            "UNSUPPORTED_MEDIA_TYPE: the body is not `application/json`",
        ));
    }
    common.push(URI_TOO_LONG);
    common.push(("429", "RATE_LIMITED: too many requests from this address"));
    if path != "/health" && path != "/metrics" {
        common.push(("500", "INTERNAL_ERROR"));
    }
    for (status, description) in common {
        op.responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| RefOr::T(error_response(description, unscoped)));
    }
}

/// An optional body (`OptionalJson`) may be left out, but when sent it is the object: the
/// `Option<T>` in the annotation marks it not required, and here loses its `null` branch.
fn optional_body_not_null(op: &mut Operation) {
    let Some(body) = op.request_body.as_mut() else {
        return;
    };
    if body.required == Some(Required::True) {
        return;
    }
    for content in body.content.values_mut() {
        if let Some(RefOr::T(Schema::OneOf(one_of))) = &content.schema {
            let object = one_of
                .items
                .iter()
                .find(|item| matches!(item, RefOr::Ref(_)))
                .cloned();
            if object.is_some() {
                content.schema = object;
            }
        }
    }
}

fn error_response(description: &str, unscoped: bool) -> Response {
    let schema = if unscoped {
        // The name `UnscopedErrorBody` is published under.
        "LegacyErrorBody"
    } else {
        "ErrorBody"
    };
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(schema)))
                .build(),
        )
        .build()
}

/// `GET /stats` answers one project's `Stats` to a secret key and `AccountStats` to a
/// session. `KeyStats` is `Stats` closed to other members, so that exactly one form matches.
fn stats_forms(doc: &mut utoipa::openapi::OpenApi) {
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    let Some(RefOr::T(Schema::Object(stats))) = components.schemas.get("Stats") else {
        return;
    };
    let mut closed = stats.clone();
    closed.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
    closed.description = Some("One project's statistics: the answer to a secret key.".into());
    components
        .schemas
        .insert("KeyStats".into(), RefOr::T(Schema::Object(closed)));
    let answer = ObjectBuilder::new()
        .property(
            "data",
            OneOfBuilder::new()
                .item(Ref::from_schema_name("KeyStats"))
                .item(Ref::from_schema_name("AccountStats")),
        )
        .required("data");
    let Some(op) = doc
        .paths
        .paths
        .get_mut("/api/v1/stats")
        .and_then(|item| item.get.as_mut())
    else {
        return;
    };
    op.responses.responses.insert(
        "200".into(),
        RefOr::T(
            ResponseBuilder::new()
                .description("a secret key: its project's statistics; a session: the sum over the caller's projects and each project")
                .content("application/json", ContentBuilder::new().schema(Some(answer)).build())
                .build(),
        ),
    );
}
