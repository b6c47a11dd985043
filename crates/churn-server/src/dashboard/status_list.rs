//! The query of a list page filtered by status (payments, cancel-flow sessions): `status`,
//! `page` and `format=csv`, kept as typed so the service names a bad value; a blank one is
//! none.

use serde::Deserialize;

use super::pager::{asked, given};

#[derive(Deserialize, Default)]
pub struct StatusList {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    page: Option<String>,
    #[serde(default)]
    pub format: Option<String>,
}

impl StatusList {
    /// The status filter, and `page` unless the caller names one; a page that is not a
    /// number is 0, which the service refuses.
    pub fn filter(&self, page: Option<i64>) -> (Option<String>, Option<i64>) {
        (given(&self.status), page.or_else(|| asked(&self.page)))
    }

    /// The list at `path` with the same filter, on `page`, in `format`.
    pub fn href(&self, path: &str, page: Option<i64>, format: Option<&str>) -> String {
        super::layout::list_href(path, &[("status", &self.status)], page, format)
    }
}
