//! Outcome webhook endpoints and their delivery log (decisions §19).

use churn_core::api::Page;
use churn_core::api::webhooks::{
    CreatedWebhookEndpoint, DeliveryQuery, NewWebhookEndpoint, WebhookDelivery, WebhookEndpoint,
    WebhookEndpointPatch,
};
use reqwest::Method;

use super::{Client, decode, segment};
use crate::error::Error;

fn endpoints_path(slug: &str) -> String {
    format!("/projects/{}/webhook-endpoints", segment(slug))
}

fn endpoint_path(slug: &str, id: &str) -> String {
    format!("{}/{}", endpoints_path(slug), segment(id))
}

impl Client {
    /// The project's endpoints, oldest first, without their secrets.
    pub async fn webhook_endpoints(&self, slug: &str) -> Result<Vec<WebhookEndpoint>, Error> {
        self.call(Method::GET, &endpoints_path(slug), None::<&()>)
            .await
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
        self.send(Method::DELETE, &endpoint_path(slug, id), None::<&()>)
            .await?;
        Ok(())
    }

    /// One page of an endpoint's deliveries, newest first.
    pub async fn webhook_deliveries(
        &self,
        slug: &str,
        id: &str,
        query: &DeliveryQuery,
    ) -> Result<Page<WebhookDelivery>, Error> {
        let path = format!("{}/deliveries", endpoint_path(slug, id));
        let response = self
            .send_query(Method::GET, &path, Some(query), None::<&()>)
            .await?;
        decode(response).await
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
        self.call(Method::POST, &path, None::<&()>).await
    }

    /// Sends a `webhook.test` message to the endpoint (admins).
    pub async fn test_webhook_endpoint(
        &self,
        slug: &str,
        id: &str,
    ) -> Result<WebhookDelivery, Error> {
        let path = format!("{}/test", endpoint_path(slug, id));
        self.call(Method::POST, &path, None::<&()>).await
    }
}
