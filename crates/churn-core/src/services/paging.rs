//! Paging of the list operations: `page` and `per_page` validated once, and the offset and
//! the `Meta` they give.

use crate::api::Meta;
use crate::domain::validation::{Validator, between};
use crate::error::Result;

pub(super) const DEFAULT_PER_PAGE: i64 = 20;
pub(super) const MAX_PER_PAGE: i64 = 100;

/// A validated page: `number` from 1 (at most `u32::MAX`: pages are u32 on the wire, so a
/// larger one is refused, never truncated), `per_page` from 1 to `MAX_PER_PAGE`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Page {
    pub number: i64,
    pub per_page: i64,
}

impl Page {
    /// The page asked for (default the first, of `DEFAULT_PER_PAGE`); what is out of range is
    /// added to `v`.
    pub fn check(v: &mut Validator, page: Option<i64>, per_page: Option<i64>) -> Page {
        let number = page.unwrap_or(1);
        v.check("page", between(number, 1..=i64::from(u32::MAX)));
        let per_page = per_page.unwrap_or(DEFAULT_PER_PAGE);
        v.check("per_page", between(per_page, 1..=MAX_PER_PAGE));
        Page { number, per_page }
    }

    /// `check` for a query whose only fields are the page's.
    pub fn parse(page: Option<i64>, per_page: Option<i64>) -> Result<Page> {
        let mut v = Validator::new();
        let page = Page::check(&mut v, page, per_page);
        v.finish()?;
        Ok(page)
    }

    /// How many rows come before this page.
    pub fn offset(self) -> i64 {
        (self.number - 1).saturating_mul(self.per_page)
    }

    /// The page's `Meta` for a list of `total` rows.
    pub fn meta(self, total: u64) -> Meta {
        Meta {
            page: u32::try_from(self.number).unwrap_or(u32::MAX),
            per_page: u32::try_from(self.per_page).unwrap_or(u32::MAX),
            total,
            total_pages: total.div_ceil(u64::try_from(self.per_page).unwrap_or(1)),
        }
    }
}
