//! Tracking, churn-risk scoring and the alert log.

use churn_core::api::Page;
use churn_core::api::alerts::{Alert, AlertQuery};
use churn_core::api::behavior::TrackRequest;
use churn_core::api::risk::{Recomputed, RiskConfig, RiskConfigPatch};
use reqwest::Method;

use super::{Client, project_path, segment};
use crate::error::Error;

fn risk_path(slug: &str) -> String {
    project_path(slug, "/churn-risk")
}

impl Client {
    /// `POST /track` (secret key): one event or a batch.
    pub async fn track(&self, request: &TrackRequest) -> Result<(), Error> {
        self.send(Method::POST, "/track", Some(request)).await?;
        Ok(())
    }

    pub async fn risk_config(&self, slug: &str) -> Result<RiskConfig, Error> {
        let path = format!("{}/config", risk_path(slug));
        self.get(&path).await
    }

    /// Changes the fields given (admins, with a session token).
    pub async fn update_risk_config(
        &self,
        slug: &str,
        patch: &RiskConfigPatch,
    ) -> Result<RiskConfig, Error> {
        let path = format!("{}/config", risk_path(slug));
        self.call(Method::PUT, &path, Some(patch)).await
    }

    /// Scores the project now and says how many customers got a score and how many alerts
    /// the run raised.
    pub async fn recompute_risk(&self, slug: &str) -> Result<Recomputed, Error> {
        let path = format!("{}/recompute", risk_path(slug));
        self.post_empty(&path).await
    }

    /// One page of the alert log, newest first.
    pub async fn alerts(&self, slug: &str, query: &AlertQuery) -> Result<Page<Alert>, Error> {
        let path = format!("{}/alerts", risk_path(slug));
        self.get_page(&path, query).await
    }

    /// Delivers a settled alert again (admins; 409 while it is pending).
    pub async fn redeliver_alert(&self, slug: &str, id: &str) -> Result<Alert, Error> {
        let path = format!("{}/alerts/{}/redeliver", risk_path(slug), segment(id));
        self.post_empty(&path).await
    }
}
