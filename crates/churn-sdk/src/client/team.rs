//! Team (invitations and members) and analytics (cohorts, forecast, uplift, the cancel-flow
//! funnel) calls.

use churn_core::api::analytics::{
    CancelFlowFunnel, CohortRow, CohortsQuery, ForecastQuery, Forecasting, FunnelQuery, Uplift,
    UpliftQuery,
};
use churn_core::api::team::{Accepted, ChangeRole, CreateInvitation, Invitation, Member};
use reqwest::Method;

use super::{Client, project_path, segment};
use crate::error::Error;

impl Client {
    /// Invites an address; the answer's `accept_url` (it holds the token) is shown only here.
    pub async fn invite(
        &self,
        slug: &str,
        request: &CreateInvitation,
    ) -> Result<Invitation, Error> {
        self.call(
            Method::POST,
            &project_path(slug, "/invitations"),
            Some(request),
        )
        .await
    }

    /// The project's pending invitations.
    pub async fn invitations(&self, slug: &str) -> Result<Vec<Invitation>, Error> {
        self.get(&project_path(slug, "/invitations")).await
    }

    pub async fn revoke_invitation(&self, slug: &str, id: &str) -> Result<(), Error> {
        let path = format!("/projects/{}/invitations/{}", segment(slug), segment(id));
        self.delete(&path).await
    }

    /// Joins the project of an invitation sent to the signed-in user's address.
    pub async fn accept_invitation(&self, token: &str) -> Result<Accepted, Error> {
        self.post_empty(&format!("/invitations/{}/accept", segment(token)))
            .await
    }

    pub async fn members(&self, slug: &str) -> Result<Vec<Member>, Error> {
        self.get(&project_path(slug, "/members")).await
    }

    pub async fn change_member_role(
        &self,
        slug: &str,
        user_id: &str,
        role: &str,
    ) -> Result<Member, Error> {
        let path = format!("/projects/{}/members/{}", segment(slug), segment(user_id));
        let body = ChangeRole {
            role: role.to_owned(),
        };
        self.call(Method::PATCH, &path, Some(&body)).await
    }

    /// Removes a member; one's own id leaves the project.
    pub async fn remove_member(&self, slug: &str, user_id: &str) -> Result<(), Error> {
        let path = format!("/projects/{}/members/{}", segment(slug), segment(user_id));
        self.delete(&path).await
    }

    /// One row per calendar month, newest first.
    pub async fn cohorts(&self, slug: &str, query: &CohortsQuery) -> Result<Vec<CohortRow>, Error> {
        self.get_data(&project_path(slug, "/cohorts"), query).await
    }

    pub async fn forecasting(
        &self,
        slug: &str,
        query: &ForecastQuery,
    ) -> Result<Forecasting, Error> {
        self.get_data(&project_path(slug, "/forecasting"), query)
            .await
    }

    /// Autopilot's treatment group against its holdout.
    pub async fn uplift(&self, slug: &str, query: &UpliftQuery) -> Result<Uplift, Error> {
        self.get_data(&project_path(slug, "/analytics/uplift"), query)
            .await
    }

    /// The cancel-flow funnel of the sessions opened in the last `days` days (default 30).
    pub async fn cancel_flow_funnel(
        &self,
        slug: &str,
        query: &FunnelQuery,
    ) -> Result<CancelFlowFunnel, Error> {
        self.get_data(&project_path(slug, "/analytics/cancel-flow"), query)
            .await
    }
}
