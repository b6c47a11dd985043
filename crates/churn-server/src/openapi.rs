//! The OpenAPI document's frame; paths come from the handlers' annotations as routes are
//! registered, so the document covers exactly the routes that exist.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(title = "churn", description = "Churn recovery service API. Paths under /api/v1 are the versioned API."),
    modifiers(&Security),
    tags(
        (name = "auth", description = "Accounts and sessions"),
        (name = "projects", description = "Projects, keys and settings"),
        (name = "churn events", description = "Churn events and recovery emails, project-scoped"),
        (name = "churn events (unscoped)", description = "The older unscoped form of the churn event routes"),
        (name = "statistics", description = "Recovery statistics"),
        (name = "tracking", description = "Open pixel and click redirects of sent emails"),
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
