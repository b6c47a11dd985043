//! Where a paged list is, for the pager under it (`pager.html`): the page shown, how many
//! there are, and a link to each neighbouring page there is; and the filters and page a
//! list's query asks for.

use churn_core::api::Meta;

pub struct Pages {
    pub page: i64,
    pub total_pages: u64,
    pub prev: Option<String>,
    pub next: Option<String>,
}

impl Pages {
    /// Page `page` of `total_pages`; `link` is another page's address.
    pub fn new(page: i64, total_pages: u64, link: impl Fn(i64) -> String) -> Self {
        Pages {
            prev: (page > 1).then(|| link(page - 1)),
            next: ((page as u64) < total_pages).then(|| link(page + 1)),
            page,
            total_pages,
        }
    }

    /// The page a service's list answered.
    pub fn of(meta: &Meta, link: impl Fn(i64) -> String) -> Self {
        Pages::new(i64::from(meta.page), meta.total_pages, link)
    }
}

/// A list's filter as typed: none when blank.
pub fn given(value: &Option<String>) -> Option<String> {
    value.clone().filter(|v| !v.trim().is_empty())
}

/// The page a list's `?page=` asks for: none when blank; one that is not a number is 0, which
/// the service refuses.
pub fn asked(page: &Option<String>) -> Option<i64> {
    given(page).map(|p| p.trim().parse().unwrap_or(0))
}
