//! Outcome webhook endpoints and their delivery log (decisions §19).

use churn_core::api::Page;
use churn_core::api::webhooks::{
    CreatedWebhookEndpoint, DeliveryQuery, NewWebhookEndpoint, WebhookDelivery, WebhookEndpoint,
    WebhookEndpointPatch,
};
use reqwest::Method;

use super::{Client, project_path, segment};
use crate::error::Error;

fn endpoints_path(slug: &str) -> String {
    project_path(slug, "/webhook-endpoints")
}

fn endpoint_path(slug: &str, id: &str) -> String {
    format!("{}/{}", endpoints_path(slug), segment(id))
}

impl Client {
    /// The project's endpoints, oldest first, without their secrets.
    pub async fn webhook_endpoints(&self, slug: &str) -> Result<Vec<WebhookEndpoint>, Error> {
        self.get(&endpoints_path(slug)).await
    }

    /// Creates an endpoint (admins); the answer holds its signing secret, shown this once.
    pub async fn create_webhook_endpoint(
        &self,
        slug: &str,
        endpoint: &NewWebhookEndpoint,
    ) -> Result<CreatedWebhookEndpoint, Error> {
        self.call(Method::POST, &endpoints_path(slug), Some(endpoint))
            .await
    }

    /// Changes the fields given (admins).
    pub async fn update_webhook_endpoint(
        &self,
        slug: &str,
        id: &str,
        patch: &WebhookEndpointPatch,
    ) -> Result<WebhookEndpoint, Error> {
        self.call(Method::PATCH, &endpoint_path(slug, id), Some(patch))
            .await
    }

    /// Deletes an endpoint and its delivery log (admins).
    pub async fn delete_webhook_endpoint(&self, slug: &str, id: &str) -> Result<(), Error> {
        self.delete(&endpoint_path(slug, id)).await
    }

    /// One page of an endpoint's deliveries, newest first.
    pub async fn webhook_deliveries(
        &self,
        slug: &str,
        id: &str,
        query: &DeliveryQuery,
    ) -> Result<Page<WebhookDelivery>, Error> {
        let path = format!("{}/deliveries", endpoint_path(slug, id));
        self.get_page(&path, query).await
    }

    /// Delivers a settled delivery again with the same message id (admins; 409 while it is
    /// pending).
    pub async fn redeliver_webhook(
        &self,
        slug: &str,
        id: &str,
        delivery_id: &str,
    ) -> Result<WebhookDelivery, Error> {
        let path = format!(
            "{}/deliveries/{}/redeliver",
            endpoint_path(slug, id),
            segment(delivery_id)
        );
        self.post_empty(&path).await
    }

    /// Sends a `webhook.test` message to the endpoint (admins).
    pub async fn test_webhook_endpoint(
        &self,
        slug: &str,
        id: &str,
    ) -> Result<WebhookDelivery, Error> {
        let path = format!("{}/test", endpoint_path(slug, id));
        self.post_empty(&path).await
    }
}
