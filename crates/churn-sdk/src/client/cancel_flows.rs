//! Cancel flows shown by segment and priority (decisions §19), the results of their
//! experiments, the flow the widget is shown for a customer, and the sessions of the widget.

use churn_core::api::Page;
use churn_core::api::cancel_flow::{
    CancelFlowSession, ConfigQuery, FlowResults, FlowResultsQuery, SegmentedFlow, SessionQuery,
    WidgetConfig,
};
use churn_core::domain::cancel_flow::SegmentedFlowInput;
use reqwest::Method;

use super::{Client, project_path, segment};
use crate::error::Error;

fn flows_path(slug: &str) -> String {
    project_path(slug, "/cancel-flows")
}

fn flow_path(slug: &str, id: &str) -> String {
    format!("{}/{}", flows_path(slug), segment(id))
}

impl Client {
    /// The project's segmented flows in routing order (priority, then the older first).
    pub async fn cancel_flows(&self, slug: &str) -> Result<Vec<SegmentedFlow>, Error> {
        self.get(&flows_path(slug)).await
    }

    pub async fn segmented_cancel_flow(
        &self,
        slug: &str,
        id: &str,
    ) -> Result<SegmentedFlow, Error> {
        self.get(&flow_path(slug, id)).await
    }

    /// The results of a flow's experiment over `query.days` (default 90): each variant's
    /// submissions, saved and cancelled, and its save rate against the first variant's.
    pub async fn cancel_flow_results(
        &self,
        slug: &str,
        id: &str,
        query: &FlowResultsQuery,
    ) -> Result<FlowResults, Error> {
        let path = format!("{}/results", flow_path(slug, id));
        self.get_data(&path, query).await
    }

    /// Creates a flow shown to the customers of its segment (admins); its `variants`, when
    /// given, make an experiment.
    pub async fn create_cancel_flow(
        &self,
        slug: &str,
        flow: &SegmentedFlowInput,
    ) -> Result<SegmentedFlow, Error> {
        self.call(Method::POST, &flows_path(slug), Some(flow)).await
    }

    /// Replaces a flow (admins); what `flow` leaves out takes its default.
    pub async fn replace_cancel_flow(
        &self,
        slug: &str,
        id: &str,
        flow: &SegmentedFlowInput,
    ) -> Result<SegmentedFlow, Error> {
        self.call(Method::PUT, &flow_path(slug, id), Some(flow))
            .await
    }

    /// Deletes a flow (admins); events routed to it keep its id.
    pub async fn delete_cancel_flow(&self, slug: &str, id: &str) -> Result<(), Error> {
        self.delete(&flow_path(slug, id)).await
    }

    /// The flow the widget shows a customer with the facts in `query`, by public key: the
    /// routed flow (`flow.flow_id`), else the project's default one; with the customer's
    /// hash, the session the open started (`session_id`).
    pub async fn cancel_flow_config(
        &self,
        public_key: &str,
        query: &ConfigQuery,
    ) -> Result<WidgetConfig, Error> {
        let path = format!("/cancel-flow/config/{}", segment(public_key));
        self.get_data(&path, query).await
    }

    /// One page of the project's cancel-flow sessions, newest first, each with its status as
    /// it reads now.
    pub async fn cancel_flow_sessions(
        &self,
        slug: &str,
        query: &SessionQuery,
    ) -> Result<Page<CancelFlowSession>, Error> {
        let path = project_path(slug, "/cancel-flow/sessions");
        self.get_page(&path, query).await
    }
}
