//! The dashboard's static files, embedded in the binary and served under a name that holds a
//! hash of their content (`dashboard.3f2a…9c.css`), so they can be cached for a year: a
//! changed file is a new name.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::error::PageError;

pub struct Asset {
    /// `dashboard.css`
    pub name: &'static str,
    /// `dashboard.<hash>.css`
    pub hashed: String,
    content_type: &'static str,
    bytes: &'static [u8],
}

const FILES: &[(&str, &str, &[u8])] = &[
    (
        "dashboard.css",
        "text/css; charset=utf-8",
        include_bytes!("assets/dashboard.css"),
    ),
    (
        "htmx.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/htmx.min.js"),
    ),
    (
        "copy.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/copy.js"),
    ),
    (
        "cancel-flow-editor.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/cancel-flow-editor.js"),
    ),
    (
        "cancel-flow-preview.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/cancel-flow-preview.js"),
    ),
];

static ASSETS: LazyLock<Vec<Asset>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|(name, content_type, bytes)| {
            let hash = hex(&Sha256::digest(bytes)[..6]);
            let (stem, ext) = name
                .rsplit_once('.')
                .expect("asset names have an extension");
            Asset {
                name,
                hashed: format!("{stem}.{hash}.{ext}"),
                content_type,
                bytes,
            }
        })
        .collect()
});

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The URL of an asset by its plain name, for templates.
pub fn url(name: &str) -> String {
    let asset = ASSETS
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no dashboard asset named {name}"));
    format!("/app/assets/{}", asset.hashed)
}

pub async fn serve(Path(file): Path<String>) -> Result<Response, PageError> {
    let asset = ASSETS
        .iter()
        .find(|a| a.hashed == file)
        .ok_or_else(PageError::not_found)?;
    let mut response = asset.bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_carry_a_hash_of_the_content() {
        let css = super::url("dashboard.css");
        let hash = css
            .strip_prefix("/app/assets/dashboard.")
            .and_then(|rest| rest.strip_suffix(".css"))
            .unwrap();
        assert_eq!(hash.len(), 12);
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(super::url("htmx.min.js"), css);
    }
}
